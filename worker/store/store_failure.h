// StoreFailure: what a failed store call means for the thread that made it — keep the data and
// try again later, or set the data aside because writing it can never succeed.
//
// A data failure is the data's fault and repeats every time the same data is written: a
// statement PostgreSQL refused with SQLSTATE class 22 (data exception: a text it cannot hold,
// a number or interval out of range) or 23 (integrity constraint violation), or a value the
// store could not even encode as a parameter (nlohmann::json::exception: a text that is not
// UTF-8), or one libpqxx refused to send (pqxx::argument_error). The caller isolates the
// offending item and sets it aside (completion_writer.h, breaker_keeper.h).
//
// Anything else is the database's or the network's and may pass: the connection lost, a
// failover's read-only standby (25006), privileges (42501), a trigger that raises, resources
// (53xxx), timeouts and cancels (57014), serialization failures and deadlocks (40xxx), a table
// missing during a migration. Setting data aside for those would discard good results because
// the database was unwell, so the caller keeps the data, resets its connection and backs off.
//
// Pure functions of the exception; safe from any thread.
#pragma once

#include <exception>
#include <string>

namespace bulkhead {

// Whether `e`, thrown by a store call, is a data failure (above).
bool IsDataFailure(const std::exception& e);

// The SQLSTATE of a pqxx::sql_error ("22021"); "" for any other exception.
std::string SqlState(const std::exception& e);

}  // namespace bulkhead
