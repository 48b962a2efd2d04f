"""The leaf layer: settings, the base error, the clock and pure web helpers; imports nothing of ours."""
