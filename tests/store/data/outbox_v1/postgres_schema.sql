CREATE TABLE IF NOT EXISTS flowc_meta (
  name text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE IF NOT EXISTS flowc_instances (
  id text PRIMARY KEY,
  flow text NOT NULL,
  flow_version integer NOT NULL,
  graph_hash text NOT NULL,
  state text NOT NULL,
  version bigint NOT NULL,
  seq bigint NOT NULL,
  snapshot jsonb NOT NULL,
  created_at double precision NOT NULL,
  updated_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS flowc_instances_flow_state ON flowc_instances (flow, state);
CREATE INDEX IF NOT EXISTS flowc_instances_updated ON flowc_instances (updated_at);
CREATE TABLE IF NOT EXISTS flowc_history (
  instance_id text NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  at double precision NOT NULL,
  source text,
  target text,
  trigger text,
  payload jsonb,
  reason text,
  kind text,
  via jsonb,
  PRIMARY KEY (instance_id, seq)
);
CREATE TABLE IF NOT EXISTS flowc_timers (
  instance_id text NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  timer_id text NOT NULL,
  state text NOT NULL,
  deadline double precision NOT NULL,
  data jsonb,
  lease_owner text,
  lease_until double precision,
  PRIMARY KEY (instance_id, timer_id)
);
CREATE INDEX IF NOT EXISTS flowc_timers_deadline ON flowc_timers (deadline);
CREATE TABLE IF NOT EXISTS flowc_keys (
  instance_id text NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  key text NOT NULL,
  outcome jsonb,
  at double precision NOT NULL,
  PRIMARY KEY (instance_id, key)
);
CREATE TABLE IF NOT EXISTS flowc_graphs (
  hash text PRIMARY KEY,
  flow text NOT NULL,
  version integer NOT NULL,
  ir text NOT NULL,
  stored_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS flowc_outbox (
  id bigserial PRIMARY KEY,
  instance_id text NOT NULL,
  seq bigint NOT NULL,
  idx integer NOT NULL,
  effect text NOT NULL,
  payload jsonb NOT NULL,
  at double precision NOT NULL,
  UNIQUE (instance_id, seq, idx)
);
