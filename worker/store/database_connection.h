// OpenConnection: how every connection of a node is opened — named in pg_stat_activity after
// the node and its part, and with the session settings of the connection string applied after
// connecting rather than sent at startup, so that a node works through a connection pooler.
//
// A node's connection string carries its session settings in libpq's `options` keyword
// (`-c statement_timeout=60000`, WithSessionSettings, and whatever `-c` the operator wrote).
// PgBouncer refuses a startup packet with `options` ("unsupported startup parameter: options")
// unless told to ignore it, and then the settings are silently gone. So OpenConnection takes
// every `-c name=value` (also `-cname=value` and `--name=value`) out of `options`, connects,
// and sets them with `SELECT set_config(…)` (one statement each, usually the one): the same
// settings, in a form every pooler in session mode passes on. Anything else in `options` stays
// there. (A setting PostgreSQL takes only at connection start, such as log_connections, now
// fails the connection with PostgreSQL's message: set it on the server or the role instead.)
//
// `application_name` is `bulkhead:<node>:<part>` (SetConnectionNode; printable ASCII, other
// bytes become '?', clipped to PostgreSQL's 63 bytes), replacing any the string set, so an
// operator can tell each connection of each node apart (`SELECT application_name, state FROM
// pg_stat_activity`).
//
// OpenPooledConnection is the same for a connection through a pooler in transaction mode, whose
// settings are made per transaction instead (pooled_connection.h).
//
// SetConnectionNode is called once by the node before any thread opens a connection; the rest
// is pure or opens a connection for the calling thread.
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bulkhead {

// The node name every later connection names itself after. Before any thread starts.
void SetConnectionNode(std::string node);

// "bulkhead:<node>:<part>", as PostgreSQL keeps it: printable ASCII, at most 63 bytes.
std::string ApplicationName(std::string_view node, std::string_view part);

// `conninfo` split into a keyword/value string without the `-c` settings of its `options`, and
// those settings in order. A string libpq cannot parse comes back unchanged, with no settings.
struct StartupSettings {
  std::string conninfo;
  std::vector<std::pair<std::string, std::string>> settings;
};
StartupSettings TakeStartupSettings(const std::string& conninfo);

// Connects to `conninfo` as part `part` of this node and applies its settings. Throws what
// pqxx throws (pqxx::broken_connection when the server cannot be reached).
std::unique_ptr<pqxx::connection> OpenConnection(const std::string& conninfo,
                                                 std::string_view part);

// The same for a connection through a pooler in transaction mode (pooled_connection.h): named,
// but its settings not made, since the next transaction may run on another server connection;
// they come back in `settings`, for each transaction to make.
std::unique_ptr<pqxx::connection> OpenPooledConnection(
    const std::string& conninfo, std::string_view part,
    std::vector<std::pair<std::string, std::string>>* settings);

}  // namespace bulkhead
