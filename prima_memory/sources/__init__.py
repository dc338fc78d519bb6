"""Sources: each module turns one tool's files into `records.SessionDelta`s."""
