"""The `.flow` language server (`flowc lsp`): editor support over the Language Server Protocol."""
