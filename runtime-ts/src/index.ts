// The package's public surface: see docs/typescript.md.
export const IR_VERSIONS = [1, 2, 3] as const;
