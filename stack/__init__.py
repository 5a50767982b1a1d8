"""What ``__main__.py`` and the components share that is not a component: names and specs, the output contract,
secrecy, and the Pyroscope profile-type IDs (which the flame-graph reader and ``ops.verify`` import too)."""
