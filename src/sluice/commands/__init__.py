"""One module per sluice subcommand: argument definitions and the glue that calls the library."""
