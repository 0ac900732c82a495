"""One module per subcommand: parse options, call the core, hand rows to output."""
