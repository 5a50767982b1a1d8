"""The flame-graph reader, ``python -m flamegraph.hotspots``: formats, model, analysis, the text and SVG renderers,
and the Pyroscope query through Grafana."""
