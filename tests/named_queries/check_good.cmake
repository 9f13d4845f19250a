# Runs named_queries.cmake on tests/named_queries/good and checks the SQL it embeds and the
# struct it generates for a statement with declarations.
cmake_minimum_required(VERSION 3.25)
include(${BULKHEAD_SOURCE_DIR}/worker/store/named_queries.cmake)
file(READ ${BULKHEAD_QUERY_OUTPUT} generated)
string(FIND "${generated}" "{\"a.sql\", \"FooBar\", \"foo_bar\"," at_name)
string(FIND "${generated}" "SELECT ((3 * 2) + least(4, 4)) + (2 * 2) AS n" at_sql)
string(FIND "${generated}" "{\"name\", \"text\", true}," at_declared)
if(at_name LESS 0 OR at_sql LESS 0 OR at_declared LESS 0)
  message(FATAL_ERROR "unexpected output:\n${generated}")
endif()
get_filename_component(dir ${BULKHEAD_QUERY_OUTPUT} DIRECTORY)
file(READ ${dir}/a_statements.h header)
foreach(expected IN ITEMS "struct Typed {" "static constexpr const char* kStatement = \"typed\""
                          "int64_t id;  // $1 bigint" "std::optional<std::string> name;  // $2 text"
                          "std::optional<std::string> name{};  // text")
  string(FIND "${header}" "${expected}" at)
  if(at LESS 0)
    message(FATAL_ERROR "a_statements.h has no `${expected}`:\n${header}")
  endif()
endforeach()
message(STATUS "named queries: good")
