"""The `adkt` subcommands, one module per command group; `adkt.main` assembles them."""
