"""`flowc inspect`: a local, read-only-by-default web app over a store (docs/inspect.md)."""
