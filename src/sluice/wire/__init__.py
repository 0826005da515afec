"""MySQL client/server protocol as pure functions: framing, handshake, auth, commands, results.

No sockets here: the I/O shell in ``sluice.io.connection`` feeds these functions bytes.
"""
