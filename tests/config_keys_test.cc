// The config key tables (config_keys.h) against what is written elsewhere about them:
// docs/configuration.md, whose summary table and one section per key must name exactly the keys
// of each table, with the table's type and the default the struct starts with, and the shipped
// tier files, which spell out every tier key.
#include "config_keys.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "source_file.h"

namespace bulkhead {
namespace {

using nlohmann::json;
using testing::ReadSourceFile;

// The text of `## <title>` up to the next `## ` heading.
std::string Chapter(const std::string& doc, const std::string& title) {
  size_t start = doc.find("\n## " + title + "\n");
  EXPECT_NE(start, std::string::npos) << "no chapter ## " << title;
  if (start == std::string::npos) return "";
  size_t end = doc.find("\n## ", start + 1);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  std::getline(in, cell, '|');  // before the first |
  while (std::getline(in, cell, '|')) {
    size_t first = cell.find_first_not_of(' ');
    size_t last = cell.find_last_not_of(' ');
    cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  if (!cells.empty() && cells.back().empty()) cells.pop_back();  // after the last |
  return cells;
}

struct DocKey {
  std::string summary_type;  // the "Type" cell of the chapter's summary table
  std::string default_cell;  // the "Default" cell of the key's own section
  bool has_section = false;
};

// The keys a chapter documents: rows "| [`key`](#key) | type | …" of its summary table, and
// sections "### `key`" with a table that has a "Default" column.
std::map<std::string, DocKey> DocumentedKeys(const std::string& chapter) {
  std::map<std::string, DocKey> keys;
  const std::regex row(R"(^\| \[`([a-z_]+)`\]\(#([a-z_]+)\) \|)");
  const std::regex section(R"(^### `([a-z_]+)`$)");
  std::stringstream in(chapter);
  std::string line;
  std::string current;  // the section being read
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      EXPECT_EQ(m[1], m[2]) << "the summary row of " << m[1] << " links elsewhere";
      keys[m[1]].summary_type = Cells(line).at(1);
    } else if (std::regex_match(line, m, section)) {
      current = m[1];
      keys[current].has_section = true;
      header.clear();
    } else if (!current.empty() && line.starts_with("|") && !line.starts_with("|---")) {
      if (header.empty()) {
        header = Cells(line);
        continue;
      }
      std::vector<std::string> cells = Cells(line);
      for (size_t i = 0; i < header.size() && i < cells.size(); ++i) {
        if (header[i] == "Default") keys[current].default_cell = cells[i];
      }
      current.clear();  // only the first row under the header
    }
  }
  return keys;
}

// What a Default cell says, as the value it names: the first `code` in it, read as JSON when it
// is JSON (`20`, `0.5`, `[]`, `false`) and as a string otherwise (`tiers`, `127.0.0.1:9464`).
std::optional<json> DocumentedDefault(const std::string& cell) {
  std::smatch m;
  if (!std::regex_search(cell, m, std::regex("`([^`]+)`"))) return std::nullopt;
  json parsed = json::parse(m[1].str(), nullptr, false);
  return parsed.is_discarded() ? json(m[1].str()) : parsed;
}

template <typename Options>
void ExpectDocumented(std::span<const ConfigKey<Options>> table, const std::string& chapter_title) {
  SCOPED_TRACE("docs/configuration.md, ## " + chapter_title);
  const std::string chapter = Chapter(ReadSourceFile("docs/configuration.md"), chapter_title);
  std::map<std::string, DocKey> documented = DocumentedKeys(chapter);
  const Options defaults;
  std::set<std::string> names;
  for (const ConfigKey<Options>& key : table) {
    const std::string name(key.name);
    names.insert(name);
    SCOPED_TRACE(name);
    auto it = documented.find(name);
    ASSERT_NE(it, documented.end()) << "the key is not in the chapter's table";
    const DocKey& doc = it->second;
    EXPECT_EQ(doc.summary_type, key.type) << "the summary table gives another type";
    EXPECT_TRUE(doc.has_section) << "the key has no section ### `" << name << "`";
    const json value = key.value(defaults);
    std::optional<json> shown = DocumentedDefault(doc.default_cell);
    if (value == json("")) {
      EXPECT_TRUE(doc.default_cell.starts_with("not set")) << doc.default_cell;
    } else if (value == json(NodeOptions::DefaultNodeName())) {
      EXPECT_NE(doc.default_cell.find("host name"), std::string::npos) << doc.default_cell;
    } else {
      ASSERT_TRUE(shown.has_value()) << "no `default` in: " << doc.default_cell;
      EXPECT_EQ(*shown, value) << "documented as " << doc.default_cell;
    }
  }
  for (const auto& [name, doc] : documented) {
    EXPECT_TRUE(names.contains(name))
        << "docs/configuration.md documents a key " << name << " that the code does not have";
  }
}

TEST(ConfigKeys, EveryNodeKeyIsDocumentedWithItsTypeAndDefaultAndNoOther) {
  ExpectDocumented(NodeKeys(), "Node keys");
}

TEST(ConfigKeys, EveryTierKeyIsDocumentedWithItsTypeAndDefaultAndNoOther) {
  ExpectDocumented(TierKeys(), "Tier keys");
}

TEST(ConfigKeys, TheDocSaysWhichLevelASighupReloads) {
  // The reload reads the tier files again (LoadTiers) and nothing of the node config.
  for (const auto& key : NodeKeys()) EXPECT_FALSE(key.reloadable) << key.name;
  for (const auto& key : TierKeys()) EXPECT_TRUE(key.reloadable) << key.name;
  const std::string doc = ReadSourceFile("docs/configuration.md");
  EXPECT_NE(Chapter(doc, "Node keys").find("read once, at start"), std::string::npos);
  EXPECT_NE(Chapter(doc, "Tier keys").find("again on SIGHUP"), std::string::npos);
}

TEST(ConfigKeys, NoKeyIsInBothTables) {
  std::set<std::string_view> names;
  for (const auto& key : NodeKeys()) EXPECT_TRUE(names.insert(key.name).second) << key.name;
  for (const auto& key : TierKeys()) EXPECT_TRUE(names.insert(key.name).second) << key.name;
}

TEST(ConfigKeys, TheShippedTierFilesSpellOutEveryTierKey) {
  for (const char* file : {"tiers/default.json", "tiers/bulk.json"}) {
    SCOPED_TRACE(file);
    const json tier = json::parse(ReadSourceFile(file));
    std::set<std::string> keys;
    for (const auto& [key, value] : tier.items()) keys.insert(key);
    std::set<std::string> table;
    for (const auto& key : TierKeys()) table.insert(std::string(key.name));
    EXPECT_EQ(keys, table);
  }
}

}  // namespace
}  // namespace bulkhead
