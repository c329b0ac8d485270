"""Decoding Lab: an interactive teaching app about how language models pick the next token."""
