"""The stack's configuration: schema (StackConfig, ConfigError), rules (RULES, one line per key), cli_values (how the
Pulumi CLI, Go and yaml.v3 read values), names (derived names), load (pulumi.Config -> StackConfig) and references
(stack references). ``__main__`` reads ``load.load()``, then ``references.resolve`` and ``references.for_cluster``."""
