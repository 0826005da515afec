"""MySQL client/server protocol as pure functions: framing, handshake, auth, commands, results. No sockets here."""
