"""SCXML import and export (docs/scxml.md): a safe reader, the importer to `.flow` text and the
exporter from compiled flows. Imported lazily by the `import`/`export` commands."""
