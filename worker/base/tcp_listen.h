// ListenOn: binds an acceptor to `listen` ("host:port", an IPv6 host in brackets) and starts
// listening — the one way both HTTP listeners of the binary (the node's StatusServer and
// `bulkhead console`) read their address. Called by the listener's constructor, on its thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <utility>  // first: Asio 1.74's awaitable.hpp needs it

namespace bulkhead {

// Resolves `listen` (a passive lookup: "0.0.0.0", "::", a name), opens `acceptor` on the first
// address with SO_REUSEADDR, binds and listens. Returns the bound port (the one asked for, or
// the one the system chose for port 0); on failure, throws std::runtime_error "cannot listen on
// <listen>: <why>".
int ListenOn(boost::asio::ip::tcp::acceptor& acceptor, const std::string& listen);

}  // namespace bulkhead
