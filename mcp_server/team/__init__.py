"""The shared HTTP team server: bearer tokens and grants, limits, audit log, live index switching, and the `ragmcp token` commands."""
