// flowc inspect: the page. No framework and no build: it reads the JSON API of app.py and
// builds the DOM with textContent only (a context or payload is shown, never interpreted).
"use strict";

const main = document.getElementById("main");
let stream = null; // the EventSource of the page shown

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const json = (value) => JSON.stringify(value);
const time = (seconds) => new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 23);

async function get(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function live(url, name, onEvent) {
  if (stream) stream.close();
  const dot = document.getElementById("live");
  stream = new EventSource(url);
  stream.addEventListener("ready", () => dot.classList.add("on"));
  stream.addEventListener(name, (e) => onEvent(JSON.parse(e.data)));
  stream.onerror = () => dot.classList.remove("on");
}

// ---- the list --------------------------------------------------------------------------

const FILTERS = ["flow", "version", "state", "final", "since", "text"];

function listQuery() {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  return Object.fromEntries(FILTERS.filter((k) => params.get(k)).map((k) => [k, params.get(k)]));
}

async function showList() {
  const query = listQuery();
  const form = el("form", { class: "filters", id: "filters", onsubmit: (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const params = new URLSearchParams();
    for (const key of FILTERS) {
      let value = data.get(key);
      if (key === "since" && value) value = String(Date.parse(value + "Z") / 1000);
      if (value) params.set(key, value);
    }
    location.hash = "#/?" + params.toString();
  } },
    ["flow", "version", "state", "text"].map((k) =>
      el("label", {}, k, el("input", { name: k, value: query[k] || "", size: k === "text" ? 24 : 12 }))),
    el("label", {}, "final", el("select", { name: "final" },
      ["", "yes", "no"].map((v) => el("option", { value: v, selected: query.final === v }, v || "any")))),
    el("label", {}, "changed since (UTC)", el("input", { name: "since", type: "datetime-local",
      value: query.since ? new Date(query.since * 1000).toISOString().slice(0, 16) : "" })),
    el("button", { type: "submit" }, "Filter"));
  const body = el("tbody", { id: "instances" });
  const more = el("button", { id: "more", hidden: true }, "Next page");
  main.replaceChildren(form, el("table", {},
    el("thead", {}, el("tr", {}, ["instance", "flow", "version", "state", "steps", "changed",
      "forked from"].map((h) => el("th", {}, h)))), body), el("p", {}, more));
  let after = null;
  async function page(reset) {
    const params = new URLSearchParams(query);
    if (after && !reset) params.set("after", after);
    const data = await get("/api/instances?" + params.toString());
    if (reset) body.replaceChildren();
    for (const row of data.instances) {
      body.append(el("tr", { "data-id": row.id },
        el("td", {}, el("a", { href: "#/i/" + encodeURIComponent(row.id), class: "mono" }, row.id)),
        el("td", {}, row.flow), el("td", {}, row.version),
        el("td", { class: row.final ? "state final" : "state" }, row.state),
        el("td", {}, row.seq), el("td", { class: "mono" }, time(row.updated_at)),
        el("td", {}, row.forked_from ? el("a", { href: "#/i/" + encodeURIComponent(row.forked_from) },
          row.forked_from) : "")));
    }
    if (!data.instances.length && reset) body.append(el("tr", {}, el("td", { colspan: 7 }, "No instance matches.")));
    after = data.next;
    more.hidden = !after;
  }
  more.addEventListener("click", () => page(false));
  await page(true);
  // Live: the first page follows the store; later pages stay as they are until asked.
  live("/api/events", "change", () => { if (!more.dataset.paged) page(true); });
  more.addEventListener("click", () => { more.dataset.paged = "1"; });
}

// ---- one instance ------------------------------------------------------------------------

async function showInstance(id) {
  const base = "/api/instances/" + encodeURIComponent(id);
  const head = el("section", { id: "head" });
  const diagram = el("img", { id: "diagram", alt: "diagram of the flow" });
  const steps = el("tbody", { id: "steps" });
  const earlier = el("button", { id: "earlier", hidden: true }, "Earlier steps");
  const side = el("div", { id: "side" });
  main.replaceChildren(head, el("div", { class: "grid" },
    el("div", {}, el("div", { class: "panel diagram" }, diagram), side),
    el("div", { class: "panel" }, el("h2", {}, "Timeline"), el("p", {}, earlier),
      el("table", {}, el("thead", {}, el("tr", {}, ["#", "at", "step", "payload", "context change",
        "effects"].map((h) => el("th", {}, h)))), steps))));
  let oldest = null;
  let newest = -1;

  async function refresh() {
    const data = await get(base);
    renderHead(head, data);
    diagram.src = base + "/diagram.svg?v=" + data.record_version;
    renderSide(side, data, base, refresh);
    const page = await get(base + "/timeline");
    for (const step of page.steps) if (step.seq > newest) steps.append(stepRow(step, newest >= 0));
    if (page.steps.length) newest = Math.max(newest, page.steps[page.steps.length - 1].seq);
    if (oldest === null) { oldest = page.earlier; earlier.hidden = oldest === null; }
    if (page.replay_problem) side.prepend(el("p", { class: "muted" }, "Context changes: " + page.replay_problem));
    if (page.pending) fill(page);
  }
  // A long history's context changes come after its steps: ask again until they are there.
  function fill(page) {
    if (!page.steps.length) return;
    const last = page.steps[page.steps.length - 1].seq;
    setTimeout(async () => {
      const again = await get(base + "/timeline?before=" + last + "&limit=" + page.steps.length);
      for (const step of again.steps) {
        const row = steps.querySelector(':scope > tr[data-seq="' + step.seq + '"]');
        if (row && step.diff) row.replaceWith(stepRow(step, false));
      }
      if (again.pending) fill(again);
    }, 300);
  }
  earlier.addEventListener("click", async () => {
    const page = await get(base + "/timeline?before=" + oldest);
    steps.prepend(...page.steps.map((s) => stepRow(s, false)));
    oldest = page.earlier;
    earlier.hidden = oldest === null;
    if (page.pending) fill(page);
  });
  await refresh();
  live(base + "/events", "step", refresh);
}

function renderHead(head, d) {
  head.replaceChildren(el("h1", {}, d.title, " ", el("span", { class: "muted" }, "v" + d.version)),
    el("p", {}, "Instance ", el("code", {}, d.id), " in ",
      el("span", { id: "state", class: d.final ? "state final" : "state" }, d.state),
      d.state_title && d.state_title !== d.state ? " (" + d.state_title + ")" : "",
      d.configuration.length > 1 ? " — active: " + d.configuration.join(", ") : "",
      " · step ", el("span", { id: "seq" }, d.seq), " · changed ", time(d.updated_at)),
    d.lineage ? el("p", { id: "lineage" }, "Forked from ",
      el("a", { href: "#/i/" + encodeURIComponent(d.lineage.forked_from) }, d.lineage.forked_from),
      " at step " + d.lineage.at) : "",
    d.forks.length ? el("p", {}, "Forks: ", d.forks.map((f) =>
      el("a", { href: "#/i/" + encodeURIComponent(f) }, f + " "))) : "");
}

function renderSide(side, d, base, refresh) {
  const panels = [el("div", { class: "panel" }, el("h2", {}, "Context"),
    el("pre", { id: "context" }, json(d.context)))];
  panels.push(el("div", { class: "panel" }, el("h2", {}, "Pending timers"),
    d.timers.length ? el("ul", {}, d.timers.map((t) =>
      el("li", {}, "→ " + (t.data && t.data.target || "?") + " at " + time(t.deadline) + " (armed in " + t.state + ")")))
      : el("p", { class: "muted" }, "none")));
  panels.push(el("div", { class: "panel" }, el("h2", {}, "Outbox"),
    d.outbox.length ? el("ul", {}, d.outbox.map((e) =>
      el("li", {}, el("code", {}, e.effect), " from step " + e.seq + " ", el("code", {}, json(e.payload)))))
      : el("p", { class: "muted" }, "nothing pending")));
  if (d.allow_send) panels.unshift(actions(d, base, refresh));
  document.getElementById("mode").textContent = d.allow_send ? "may steer (--allow-send)" : "read-only";
  side.replaceChildren(...panels);
}

// The form of an event's payload, from its JSON Schema: one input per property.
function fieldFor(name, schema) {
  const kind = schema.enum ? "enum" : schema.type;
  if (kind === "enum") return el("select", { name }, schema.enum.map((v) => el("option", { value: JSON.stringify(v) }, String(v))));
  if (kind === "boolean") return el("select", { name }, el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
  if (kind === "integer" || kind === "number") return el("input", { name, type: "number", step: kind === "integer" ? 1 : "any", "data-json": "1" });
  if (kind === "string") return el("input", { name });
  return el("input", { name, "data-json": "1", placeholder: "JSON" });
}

function payloadOf(form, schema) {
  const payload = {};
  for (const name of Object.keys((schema && schema.properties) || {})) {
    const input = form.elements[name];
    if (!input || input.value === "") continue;
    payload[name] = input.tagName === "SELECT" || input.dataset.json ? JSON.parse(input.value) : input.value;
  }
  return payload;
}

function actions(d, base, refresh) {
  const message = el("p", { id: "act-result", class: "muted" });
  async function post(body) {
    const response = await fetch(base + "/act", { method: "POST",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await response.json();
    message.className = data.ok ? "muted" : "error";
    message.textContent = data.ok ? "Done: now in " + data.to : (data.message || data.error);
    if (data.ok) await refresh();
  }
  const reason = () => el("label", {}, "reason", el("input", { name: "reason", required: true, size: 18 }));
  const force = () => el("label", {}, "force", el("input", { name: "force", type: "checkbox" }));
  const send = el("form", { id: "send" });
  const pick = el("select", { name: "event" }, d.events.map((e) => el("option", { value: e.name }, e.name)));
  const fields = el("span", {});
  const schemaOf = () => (d.events.find((e) => e.name === pick.value) || {}).schema;
  const drawFields = () => fields.replaceChildren(...Object.entries((schemaOf() || {}).properties || {})
    .map(([name, s]) => el("label", {}, name, fieldFor(name, s))));
  pick.addEventListener("change", drawFields);
  drawFields();
  send.append(el("label", {}, "event", pick), fields, reason(), force(), el("button", {}, "Send"));
  send.addEventListener("submit", (e) => { e.preventDefault();
    post({ do: "send", event: pick.value, payload: payloadOf(send, schemaOf()),
      reason: send.elements.reason.value, force: send.elements.force.checked }); });
  const go = !d.targets.length ? "" : el("form", { id: "goto" }, el("label", {}, "go to",
    el("select", { name: "target" }, d.targets.map((t) => el("option", { value: t }, t)))),
    reason(), force(), el("button", {}, "Go"));
  if (go) go.addEventListener("submit", (e) => { e.preventDefault();
    post({ do: "goto", target: go.elements.target.value, reason: go.elements.reason.value,
      force: go.elements.force.checked }); });
  const back = el("form", { id: "back" }, reason(), el("button", {}, "Back (forced)"));
  back.addEventListener("submit", (e) => { e.preventDefault();
    post({ do: "back", reason: back.elements.reason.value, force: true }); });
  return el("div", { class: "panel actions" }, el("h2", {}, "Steer"),
    d.events.length ? send : el("p", { class: "muted" }, "No event is accepted now."), go, back, message);
}

function stepRow(s, fresh) {
  const diff = s.diff ? el("table", { class: "diff" }, s.diff.map((c) => el("tr", { class: c.op },
    el("td", { class: "mono" }, c.field), el("td", {}, el("pre", {}, c.op === "add" ? "" : json(c.before))),
    el("td", {}, el("pre", {}, c.op === "remove" ? "" : json(c.after)))))) : el("span", { class: "muted", title: "being worked out" }, "…");
  const what = [el("b", {}, s.kind === "event" ? s.event : s.kind), " ",
    (s.source || "∅") + " → " + s.target];
  if (s.via.length) what.push(" via " + s.via.join(", "));
  if (s.rules_taken) what.push(el("div", { class: "muted" }, "rules " + s.rules_taken.join(", ")));
  if (s.reason) what.push(el("div", { class: "muted" }, "reason: " + s.reason));
  if (s.journals) for (const [name, text] of Object.entries(s.journals))
    if (text) what.push(el("div", { class: "muted" }, name + ": " + text));
  return el("tr", { "data-seq": s.seq, class: fresh ? "fresh" : null },
    el("td", {}, s.seq), el("td", { class: "mono" }, time(s.at)), el("td", {}, what),
    el("td", {}, s.payload === null || s.kind === "start" ? "" : el("pre", {}, json(s.payload))),
    el("td", {}, s.kind === "start" ? el("pre", {}, json(s.payload && s.payload.context)) : diff),
    el("td", {}, (s.effects || []).map((f) => el("div", {}, el("code", {}, f.effect), " " + json(f.payload)))));
}

// ---- routing -----------------------------------------------------------------------------

async function route() {
  const hash = location.hash || "#/";
  try {
    if (hash.startsWith("#/i/")) await showInstance(decodeURIComponent(hash.slice(4)));
    else await showList();
  } catch (error) {
    main.replaceChildren(el("p", { class: "error", id: "error" }, String(error.message || error)));
  }
}

window.addEventListener("hashchange", route);
route();
