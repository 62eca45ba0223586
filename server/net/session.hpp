// A client's session: the state it sets up on its connection beyond the socket (subscriptions,
// tracking, a transaction and its watched keys, its name, protocol, authentication, CLIENT REPLY,
// ASKING), and the one place that state ends. RESET returns a connection to a fresh one's state,
// as Redis 7.0's RESET does; closing a connection ends everything other parts of the server hold
// for it. HELLO changes protocol, name and authentication but resets nothing, as in Redis, so it
// has no entry here.
//
// Thread safety: the connection's own worker thread only (Connection is single-threaded); the
// registries touched (pub/sub, tracking, WATCH, the client list) take their own locks.
#pragma once

namespace kvlab::server {

struct Connection;
class Server;

// Drops every subscription of the connection (channels, patterns, shard channels).
void pubsub_forget(Server& server, unsigned worker, Connection& c);
// Turns CLIENT TRACKING off for the connection (CLIENT TRACKING OFF, RESET, close).
void tracking_forget(Server& server, Connection& c);
// MULTI ends and the watched keys are forgotten (DISCARD, EXEC, an EXEC that dispatch rejects).
void discard_transaction(Server& server, Connection& c);

// What RESET and close both end: every subscription (channels, patterns, shard channels), CLIENT
// TRACKING, MULTI, and the watched keys.
void end_client_state(Server& server, unsigned worker, Connection& c);

// RESET: end_client_state, then the name cleared, RESP2, replies on (a CLIENT REPLY SKIP already
// in force still drops RESET's own reply), unauthenticated when a password is required, and
// ASKING off. The caller writes the reply (in RESP2).
void reset_client(Server& server, unsigned worker, Connection& c);

}  // namespace kvlab::server
