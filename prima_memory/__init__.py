"""prima-memory: long-term memory for Claude Code, built from the conversation files on disk."""

__version__ = "0.1.0"
