# Named queries: worker/store/*.sql embedded in the binary at configure time (included by
# worker/store/CMakeLists.txt), the way schema/*.sql migrations are.
#
# A .sql file opens with comment lines (what it is), then holds entries, each introduced by a
# line of its own:
#   -- name: ClaimProbes          a statement, prepared under its snake_case name (claim_probes)
#   -- fragment: utc(column)      a piece of SQL that statements use as {{utc(j.created_at)}}
# followed by a one-line contract (a `-- ` comment), the reasons for its shape (more comment
# lines), and its SQL, up to the next entry. A statement's comment lines also declare its
# parameters and columns (`-- param $1 queue text`, `-- column id bigint?`), from which each
# file's statements become C++ structs: typed_statements.cmake says how, and what it refuses. A fragment's body names its parameters {{column}};
# fragments may use fragments. Every file is a configure dependency. Configuring stops, naming
# the file and the entry, on: an entry without a contract or without SQL, a malformed name, a
# name or fragment defined twice (across all files: statements of several stores may share one
# connection), SQL before the first entry, an unknown fragment, a fragment used with the wrong
# number of arguments, or fragments that expand forever.

#
# Also runs as a script (cmake -DBULKHEAD_QUERY_DIR=… -DBULKHEAD_QUERY_OUTPUT=… -P), which is
# how tests/named_queries/ checks that each malformed file is refused.
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.25)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/typed_statements.cmake)
if(NOT DEFINED BULKHEAD_QUERY_DIR)
  set(BULKHEAD_QUERY_DIR ${CMAKE_CURRENT_SOURCE_DIR})
endif()
if(NOT DEFINED BULKHEAD_QUERY_OUTPUT)
  set(BULKHEAD_QUERY_OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/generated/embedded_queries.cc)
endif()
if(CMAKE_SCRIPT_MODE_FILE)
  file(GLOB query_files ${BULKHEAD_QUERY_DIR}/*.sql)
else()
  file(GLOB query_files CONFIGURE_DEPENDS ${BULKHEAD_QUERY_DIR}/*.sql)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${query_files})
endif()
list(SORT query_files)
string(ASCII 1 entry_mark)
set(query_names "")
set(fragment_names "")

# ---- Pass 1: every file into its entries -----------------------------------------------------
foreach(query_file IN LISTS query_files)
  get_filename_component(file_name ${query_file} NAME)
  file(READ ${query_file} text)
  if(text MATCHES "\\)bulkhead_sql\"")
    message(FATAL_ERROR "worker/${file_name}: contains the raw-string delimiter )bulkhead_sql\"")
  endif()
  if(text MATCHES "${entry_mark}")
    message(FATAL_ERROR "worker/${file_name}: contains the control character \\x01")
  endif()
  string(REGEX REPLACE "\n-- (name|fragment): " "\n${entry_mark}\\1: " text "\n${text}")
  string(FIND "${text}" "${entry_mark}" at)
  if(at LESS 0)
    message(FATAL_ERROR "worker/${file_name}: no `-- name: Name` or `-- fragment: name` entry")
  endif()
  string(SUBSTRING "${text}" 0 ${at} preamble)
  if(preamble MATCHES "(^|\n)[ \t]*([^- \t\n]|-[^-])")
    message(FATAL_ERROR "worker/${file_name}: SQL before the first entry (only comments may open a file)")
  endif()
  while(at GREATER_EQUAL 0)
    math(EXPR from "${at} + 1")
    string(SUBSTRING "${text}" ${from} -1 text)
    string(FIND "${text}" "${entry_mark}" at)
    if(at GREATER_EQUAL 0)
      string(SUBSTRING "${text}" 0 ${at} entry)
    else()
      set(entry "${text}")
    endif()
    string(FIND "${entry}" "\n" eol)
    if(eol LESS 0)
      set(eol -1)
      set(body "")
    else()
      math(EXPR body_from "${eol} + 1")
      string(SUBSTRING "${entry}" ${body_from} -1 body)
    endif()
    string(SUBSTRING "${entry}" 0 ${eol} head)
    string(STRIP "${head}" head)
    if(NOT body MATCHES "^-- [^\n]*[^ \t\n]")
      message(FATAL_ERROR "worker/${file_name}: `-- ${head}` has no one-line contract (a `-- ` comment on the line under it)")
    endif()
    # The contract and the reasons are for readers; the SQL starts at the first other line.
    string(REGEX REPLACE "^([ \t]*(--[^\n]*)?\n)+" "" sql "${body}")
    string(REGEX REPLACE "[ \t\n]+$" "" sql "${sql}")
    if(sql STREQUAL "" OR sql MATCHES "^--")
      message(FATAL_ERROR "worker/${file_name}: `-- ${head}` has no SQL")
    endif()
    if(sql MATCHES ";")
      # A statement is one statement; and `;` would split the CMake list the SQL passes through.
      message(FATAL_ERROR "worker/${file_name}: `-- ${head}`: a `;` in its SQL (write none, not even in a comment inside it)")
    endif()
    if(head MATCHES "^name: ([A-Z][A-Za-z0-9]*)$")
      set(name ${CMAKE_MATCH_1})
      if(name IN_LIST query_names)
        message(FATAL_ERROR "worker/${file_name}: query ${name} is also in worker/${query_file_${name}}")
      endif()
      list(APPEND query_names ${name})
      set(query_file_${name} ${file_name})
      set(query_sql_${name} "${sql}")
      string(REGEX MATCH "^-- ([^\n]*)" contract "${body}")
      set(query_contract_${name} "${CMAKE_MATCH_1}")
      string(REGEX MATCH "^([ \t]*(--[^\n]*)?\n)+" comments "${body}")
      bulkhead_declarations("worker/${file_name}: ${name}" "${comments}"
                            query_params_${name} query_columns_${name})
    elseif(head MATCHES "^fragment: ([a-z_][a-z0-9_]*)(\\(([a-z_][a-z0-9_]*(, [a-z_][a-z0-9_]*)*)\\))?$")
      set(name ${CMAKE_MATCH_1})
      if(name IN_LIST fragment_names)
        message(FATAL_ERROR "worker/${file_name}: fragment ${name} is also in worker/${fragment_file_${name}}")
      endif()
      list(APPEND fragment_names ${name})
      set(fragment_file_${name} ${file_name})
      string(REPLACE ", " ";" params "${CMAKE_MATCH_3}")
      set(fragment_params_${name} "${params}")
      set(fragment_sql_${name} "${sql}")
    else()
      message(FATAL_ERROR "worker/${file_name}: `-- ${head}`: not `-- name: CamelCase` or `-- fragment: snake_case` / `snake_case(param, …)`")
    endif()
  endwhile()
endforeach()

# ---- Pass 2: fragments substituted, innermost first --------------------------------------------
# Splits `args` at its top-level commas (not those inside parentheses) into the list `out`.
function(bulkhead_split_args args out)
  set(parts "")
  set(part "")
  set(depth 0)
  string(LENGTH "${args}" n)
  set(i 0)
  while(i LESS n)
    string(SUBSTRING "${args}" ${i} 1 c)
    if(c STREQUAL "(")
      math(EXPR depth "${depth} + 1")
    elseif(c STREQUAL ")")
      math(EXPR depth "${depth} - 1")
    endif()
    if(c STREQUAL "," AND depth EQUAL 0)
      string(STRIP "${part}" part)
      list(APPEND parts "${part}")
      set(part "")
    else()
      string(APPEND part "${c}")
    endif()
    math(EXPR i "${i} + 1")
  endwhile()
  string(STRIP "${part}" part)
  list(APPEND parts "${part}")
  set(${out} "${parts}" PARENT_SCOPE)
endfunction()

set(query_entries "")
set(declared_fields "")
set(statement_files "")
foreach(name IN LISTS query_names)
  set(sql "${query_sql_${name}}")
  set(where "worker/${query_file_${name}}: ${name}")
  set(rounds 0)
  while(sql MATCHES "{{([a-z_][a-z0-9_]*)(\\(([^{}]*)\\))?}}")
    set(use "${CMAKE_MATCH_0}")
    set(fragment "${CMAKE_MATCH_1}")
    set(has_args "${CMAKE_MATCH_2}")
    set(args "${CMAKE_MATCH_3}")
    if(NOT fragment IN_LIST fragment_names)
      message(FATAL_ERROR "${where}: no fragment named ${fragment} (in ${use})")
    endif()
    set(params "${fragment_params_${fragment}}")
    if(has_args STREQUAL "")
      set(args "")
    else()
      bulkhead_split_args("${args}" args)
    endif()
    list(LENGTH params want)
    list(LENGTH args got)
    if(NOT want EQUAL got)
      message(FATAL_ERROR "${where}: ${use}: fragment ${fragment} takes ${want} argument(s), not ${got}")
    endif()
    set(text "${fragment_sql_${fragment}}")
    foreach(param arg IN ZIP_LISTS params args)
      string(REPLACE "{{${param}}}" "${arg}" text "${text}")
    endforeach()
    string(FIND "${sql}" "${use}" at)
    string(LENGTH "${use}" length)
    string(SUBSTRING "${sql}" 0 ${at} before)
    math(EXPR after_from "${at} + ${length}")
    string(SUBSTRING "${sql}" ${after_from} -1 after)
    set(sql "${before}${text}${after}")
    math(EXPR rounds "${rounds} + 1")
    if(rounds GREATER 200)
      message(FATAL_ERROR "${where}: fragments that expand forever (at ${use})")
    endif()
  endwhile()
  if(sql MATCHES "{{|}}")
    message(FATAL_ERROR "${where}: a malformed fragment use: write {{name}} or {{name(arg, …)}}")
  endif()
  string(REGEX REPLACE "([a-z0-9])([A-Z])" "\\1_\\2" statement "${name}")
  string(TOLOWER "${statement}" statement)
  bulkhead_check_parameters("${where}" "${sql}" "${query_params_${name}}")
  # Each declared list as an array (C++ has no empty one: `{}`, an empty span, for none).
  set(fields "")
  foreach(kind IN ITEMS Params Columns)
    string(TOLOWER "${kind}" list_name)
    if(query_${list_name}_${name})
      bulkhead_declared_array(k${name}${kind} "${query_${list_name}_${name}}" declared_fields)
      list(APPEND fields "k${name}${kind}")
    else()
      list(APPEND fields "{}")
    endif()
  endforeach()
  list(JOIN fields ", " fields)
  string(APPEND query_entries
    "    {\"${query_file_${name}}\", \"${name}\", \"${statement}\",\n"
    "     R\"bulkhead_sql(${sql}\n)bulkhead_sql\",\n     ${fields}},\n")
  string(MAKE_C_IDENTIFIER "${query_file_${name}}" file_key)
  if(NOT file_key IN_LIST statement_files)
    list(APPEND statement_files ${file_key})
    set(statement_file_${file_key} ${query_file_${name}})
    set(structs_${file_key} "")
    set(names_${file_key} "")
  endif()
  string(APPEND names_${file_key} "\"${name}\", ")
  bulkhead_statement_struct(${name} ${statement} "${query_contract_${name}}"
                            "${query_params_${name}}" "${query_columns_${name}}"
                            structs_${file_key})
endforeach()

file(CONFIGURE OUTPUT ${BULKHEAD_QUERY_OUTPUT}
     CONTENT [=[// Generated by worker/store/named_queries.cmake from worker/store/*.sql. Do not edit.
#include "named_queries.h"

namespace bulkhead {
namespace {

// Each statement's declared parameters and columns (typed_statements.cmake), for the check
// against what the server infers (tests/statement_types_test.cc).
@declared_fields@
}  // namespace

std::span<const NamedQuery> EmbeddedQueries() {
  static const NamedQuery kQueries[] = {
@query_entries@  };
  return kQueries;
}

}  // namespace bulkhead
]=] @ONLY)

# ---- Per .sql file: the statements' structs (typed_statements.cmake) ---------------------------
get_filename_component(statements_dir ${BULKHEAD_QUERY_OUTPUT} DIRECTORY)
foreach(file_key IN LISTS statement_files)
  string(REGEX REPLACE "\\.sql$" "" stem "${statement_file_${file_key}}")
  set(source_file "${statement_file_${file_key}}")
  set(structs "${structs_${file_key}}")
  string(REGEX REPLACE ", $" "" names "${names_${file_key}}")
  file(CONFIGURE OUTPUT ${statements_dir}/${stem}_statements.h
       CONTENT [=[// Generated by worker/store/named_queries.cmake (typed_statements.cmake) from
// worker/store/@source_file@. Do not edit: change the `-- param` and `-- column` lines there.
//
// One struct per statement of @source_file@: Params, one field per $n in order; Row, one field
// per column it returns; Run and RunOne bind the fields in order and read each row by position.
// And every statement's name, for the store that prepares them (@stem@::kStatements).
// tests/statement_types_test.cc holds the declarations to what PostgreSQL says of each
// statement. Stateless: each call runs on the caller's transaction, on the caller's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include "typed_statement.h"

namespace bulkhead::sql {

@structs@namespace @stem@ {
inline constexpr std::string_view kStatements[] = {@names@};
}  // namespace @stem@

}  // namespace bulkhead::sql
]=] @ONLY)
endforeach()
