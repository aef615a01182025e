// Lint rules for the TypeScript runtime: typescript-eslint's strict set, type-aware.
import { fileURLToPath } from "node:url";
import tseslint from "typescript-eslint";

// (import.meta.dirname is Node 20.11+; Debian bookworm has Node 18)
const here = fileURLToPath(new URL(".", import.meta.url));

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".test-build/"] },
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: here },
    },
    rules: {
      "no-eval": "error",
      "no-new-func": "error",
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
    },
  },
  {
    files: ["eslint.config.js"],
    ...tseslint.configs.disableTypeChecked,
  },
);
