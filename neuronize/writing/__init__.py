"""Writing: what the applied fixes come to as code, written as a person would write it in that file."""
