# Typed statements: each named query's parameters and result columns, declared by name in its
# .sql entry and generated into a C++ struct per statement (included by named_queries.cmake).
#
# A statement's comment lines (anywhere before its SQL; by habit under the contract) declare
#   -- param $1 queue text: the queue claimed      one line per $n, in order from $1
#   -- param $4 tenant bigint?                     `?`: may be NULL (a std::optional field)
#   -- column id bigint?: NULL when it took nothing
#   -- column grant_role void                      a void column is read as nothing
# the columns in the order the statement returns them; `: …` is a note for readers (no `;`).
# The types are PostgreSQL's own spelling (format_type: `double precision`, `bigint[]`), the one
# the server reports, so tests/statement_types_test.cc can hold each declaration to what the
# server infers for the prepared statement: a wrong type, name, count or order fails there,
# naming it. Whether a column may be NULL the server does not say: a NULL in a column declared
# without `?` throws pqxx::conversion_error when the row is read, as reading it by name did.
#
# For every .sql file with statements, generated/<file>_statements.h holds, per statement Foo,
# `struct bulkhead::sql::Foo` with kStatement (the prepared name), Params (one field per $n, in
# order: a designated initializer that leaves one out does not compile), Row (one field per
# column), and Run / RunOne, which bind the fields in order and read each row by position. The
# store says `sql::Claim::Run(tx, {.queue = queue, .limit = limit, …})`; no hand-written code
# binds by position or reads a column by its name.
#
# Configuring stops, naming the file and the statement, on: a malformed declaration, a $n out of
# order, a name declared twice, a type not in the table below, or SQL that uses a $n beyond the
# declared parameters.

# ---- The one table: PostgreSQL type → C++ type, as a parameter and as a column ---------------
# Keyed by string(MAKE_C_IDENTIFIER) of the type; a type without a parameter (or a column) type
# cannot be one. Integer parameters are all int64_t: a value out of the parameter's range is
# refused by the server, as when the stores bound their own int64_t values, never wrapped by a
# cast in C++ (a field narrower than what callers hold would need one). Arrays go as a literal
# (pg_array.h); a void column is read as nothing.
set(bulkhead_sql_param_text "std::string")
set(bulkhead_sql_column_text "std::string")
set(bulkhead_sql_param_name "std::string")
set(bulkhead_sql_column_name "std::string")
set(bulkhead_sql_param_jsonb "std::string")
set(bulkhead_sql_column_jsonb "std::string")
set(bulkhead_sql_param_timestamp_with_time_zone "std::string")
set(bulkhead_sql_param_bigint "int64_t")
set(bulkhead_sql_column_bigint "int64_t")
set(bulkhead_sql_param_integer "int64_t")
set(bulkhead_sql_column_integer "int")
set(bulkhead_sql_param_smallint "int64_t")
set(bulkhead_sql_column_smallint "int")
set(bulkhead_sql_param_boolean "bool")
set(bulkhead_sql_column_boolean "bool")
set(bulkhead_sql_param_double_precision "double")
set(bulkhead_sql_column_double_precision "double")
set(bulkhead_sql_param_bigint__ "std::vector<int64_t>")
set(bulkhead_sql_param_integer__ "std::vector<int>")
set(bulkhead_sql_column_void "void")
set(bulkhead_sql_not_null_bigint__ TRUE)  # an array literal is never NULL
set(bulkhead_sql_not_null_integer__ TRUE)
set(bulkhead_sql_not_null_void TRUE)

# bulkhead_declarations(<where> <comments> <params_out> <columns_out>): the declarations among
# `comments` (a statement's comment lines) as two lists of `name|type|nullable` (nullable 0/1).
function(bulkhead_declarations where comments params_out columns_out)
  string(REPLACE ";" "," comments "${comments}")
  string(REPLACE "\n" ";" lines "${comments}")
  set(params "")
  set(columns "")
  set(names "")
  set(next 1)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^-- (param|column) ")
      continue()
    endif()
    set(kind ${CMAKE_MATCH_1})
    if(kind STREQUAL "param")
      if(NOT line MATCHES "^-- param \\$([0-9]+) ([a-z_][a-z0-9_]*) ([a-z][a-z ]*[a-z](\\[\\])?)(\\??)(: .*)?$")
        message(FATAL_ERROR "${where}: `${line}`: not `-- param $N name type[?][: note]`")
      endif()
      if(NOT CMAKE_MATCH_1 EQUAL next)
        message(FATAL_ERROR "${where}: `${line}`: expected $${next} next (params are declared in $n order)")
      endif()
      math(EXPR next "${next} + 1")
      set(name ${CMAKE_MATCH_2})
      set(type ${CMAKE_MATCH_3})
      set(nullable ${CMAKE_MATCH_5})
    else()
      if(NOT line MATCHES "^-- column ([a-z_][a-z0-9_]*) ([a-z][a-z ]*[a-z](\\[\\])?)(\\??)(: .*)?$")
        message(FATAL_ERROR "${where}: `${line}`: not `-- column name type[?][: note]`")
      endif()
      set(name ${CMAKE_MATCH_1})
      set(type ${CMAKE_MATCH_2})
      set(nullable ${CMAKE_MATCH_4})
    endif()
    string(MAKE_C_IDENTIFIER "${type}" key)
    if(NOT DEFINED bulkhead_sql_${kind}_${key})
      message(FATAL_ERROR "${where}: `${line}`: no C++ type for a ${kind} of SQL type `${type}` (the table in worker/store/typed_statements.cmake)")
    endif()
    if(nullable STREQUAL "?" AND bulkhead_sql_not_null_${key})
      message(FATAL_ERROR "${where}: `${line}`: `${type}` cannot be NULL here")
    endif()
    if("${kind}:${name}" IN_LIST names)
      message(FATAL_ERROR "${where}: ${kind} ${name} declared twice")
    endif()
    list(APPEND names "${kind}:${name}")
    if(nullable STREQUAL "?")
      set(nullable 1)
    else()
      set(nullable 0)
    endif()
    list(APPEND ${kind}s "${kind}|${name}|${type}|${nullable}")
  endforeach()
  set(${params_out} "${params}" PARENT_SCOPE)
  set(${columns_out} "${columns}" PARENT_SCOPE)
endfunction()

# bulkhead_check_parameters(<where> <sql> <params>): stops when the SQL (its comments aside) uses
# a $n beyond the declared parameters.
function(bulkhead_check_parameters where sql params)
  string(REGEX REPLACE "--[^\n]*" "" code "${sql}")
  string(REGEX MATCHALL "\\$[0-9]+" uses "${code}")
  list(LENGTH params declared)
  foreach(use IN LISTS uses)
    string(SUBSTRING "${use}" 1 -1 n)
    if(n GREATER declared)
      message(FATAL_ERROR "${where}: its SQL uses ${use}, but it declares ${declared} param(s) (`-- param $N name type`)")
    endif()
  endforeach()
endfunction()

# bulkhead_field(<declaration> <name_out> <type_out> <cpp_out>): a declaration's parts and its
# C++ type (std::optional<…> when nullable).
function(bulkhead_field declaration name_out type_out cpp_out)
  string(REPLACE "|" ";" parts "${declaration}")
  list(GET parts 0 kind)
  list(GET parts 1 name)
  list(GET parts 2 type)
  list(GET parts 3 nullable)
  string(MAKE_C_IDENTIFIER "${type}" key)
  set(cpp "${bulkhead_sql_${kind}_${key}}")
  if(nullable)
    set(cpp "std::optional<${cpp}>")
  endif()
  set(${name_out} "${name}" PARENT_SCOPE)
  set(${type_out} "${type}" PARENT_SCOPE)
  set(${cpp_out} "${cpp}" PARENT_SCOPE)
endfunction()

# bulkhead_statement_struct(<name> <statement> <contract> <params> <columns> <out>): the C++
# struct of one statement, appended to `out`.
function(bulkhead_statement_struct name statement contract params columns out)
  set(code "// ${name} (${statement}): ${contract}\nstruct ${name} {\n")
  string(APPEND code "  static constexpr const char* kStatement = \"${statement}\";\n")
  set(binds "")
  if(params)
    string(APPEND code "  struct Params {\n")
    set(n 1)
    foreach(declaration IN LISTS params)
      bulkhead_field("${declaration}" field type cpp)
      string(APPEND code "    ${cpp} ${field};  // $${n} ${type}\n")
      string(APPEND binds ",\n        typed::Bind(p.${field})")
      math(EXPR n "${n} + 1")
    endforeach()
    string(APPEND code "  };\n")
    set(signature "pqxx::transaction_base& tx, const Params& p")
  else()
    set(signature "pqxx::transaction_base& tx")
  endif()
  set(row_fields "")
  if(columns)
    string(APPEND code "  struct Row {\n")
    set(i 0)
    foreach(declaration IN LISTS columns)
      bulkhead_field("${declaration}" field type cpp)
      if(NOT cpp STREQUAL "void")
        string(APPEND code "    ${cpp} ${field}{};  // ${type}\n")
        list(APPEND row_fields "typed::Read<${cpp}>(r[${i}])")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
    string(APPEND code "    static Row Of(const pqxx::row& r) {\n")
    if(row_fields)
      list(JOIN row_fields ",\n                 " row_init)
      string(APPEND code "      return Row{${row_init}};\n")
    else()
      string(APPEND code "      static_cast<void>(r);\n      return Row{};\n")
    endif()
    string(APPEND code "    }\n  };\n")
    string(APPEND code
      "  // Every row it returns, in order.\n"
      "  static std::vector<Row> Run(${signature}) {\n"
      "    const pqxx::result rows = typed::Exec(tx, kStatement${binds});\n"
      "    std::vector<Row> out;\n"
      "    out.reserve(rows.size());\n"
      "    for (const pqxx::row& r : rows) out.push_back(Row::Of(r));\n"
      "    return out;\n"
      "  }\n"
      "  // Its one row; throws pqxx::unexpected_rows when it returns another number of rows.\n"
      "  static Row RunOne(${signature}) {\n"
      "    return Row::Of(typed::Exec1(tx, kStatement${binds}));\n"
      "  }\n")
  else()
    string(APPEND code
      "  // Returns the rows it changed.\n"
      "  static int64_t Run(${signature}) {\n"
      "    return static_cast<int64_t>(typed::Exec(tx, kStatement${binds}).affected_rows());\n"
      "  }\n")
  endif()
  string(APPEND code "};\n\n")
  set(${out} "${${out}}${code}" PARENT_SCOPE)
endfunction()

# bulkhead_declared_array(<array> <declarations> <out>): the declarations as a C++ array of
# NamedQueryField named `array` (for the check against the server), appended to `out`.
function(bulkhead_declared_array array declarations out)
  set(code "constexpr NamedQueryField ${array}[] = {\n")
  foreach(declaration IN LISTS declarations)
    bulkhead_field("${declaration}" field type cpp)
    string(REPLACE "|" ";" parts "${declaration}")
    list(GET parts 3 nullable)
    if(nullable)
      set(nullable true)
    else()
      set(nullable false)
    endif()
    string(APPEND code "    {\"${field}\", \"${type}\", ${nullable}},\n")
  endforeach()
  string(APPEND code "};\n")
  set(${out} "${${out}}${code}" PARENT_SCOPE)
endfunction()
