// docs/cli.md against the real binary's help: the commands `bulkhead --help` lists (main.cc's
// command table) and the subcommands each verb's --help lists are exactly the commands the
// doc's table names, and each one's usage line, as its own --help prints it, is the synopsis the
// doc gives in its section, and the doc gives no other.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "source_file.h"

namespace bulkhead {
namespace {

using testing::Bulkhead;
using testing::CommandResult;
using testing::ReadSourceFile;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::stringstream in(line);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The lines of the block that follows the line `title` in a help text, up to a blank line.
std::vector<std::string> Block(const std::string& help, const std::string& title) {
  std::vector<std::string> block;
  bool in_block = false;
  for (const std::string& line : Lines(help)) {
    if (in_block && line.empty()) break;
    if (in_block) block.push_back(line);
    if (line == title) in_block = true;
  }
  return block;
}

// What the binary says: every command, or "command subcommand" for a verb made of
// subcommands, with the usage line its --help starts with ("bulkhead channel pause CHANNEL …").
struct Leaf {
  std::string name;
  std::string usage;
};

std::string UsageLine(const std::vector<std::string>& args) {
  SCOPED_TRACE(::testing::PrintToString(args));
  CommandResult help = Bulkhead(args);
  EXPECT_EQ(help.exit_code, 0) << help.err;
  std::string first = Lines(help.out).empty() ? "" : Lines(help.out).front();
  EXPECT_TRUE(first.starts_with("usage: bulkhead ")) << help.out;
  return first.starts_with("usage: ") ? first.substr(7) : first;
}

std::vector<Leaf> BinaryCommands() {
  CommandResult top = Bulkhead({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  std::vector<std::string> commands;
  for (const std::string& line : Block(top.out, "commands:")) {
    // "  channel pause | resume CHANNEL   …"; a summary on a line of its own is indented more.
    if (!line.starts_with("  ") || line.starts_with("   ")) continue;
    std::string name = Words(line).front();
    if (commands.empty() || commands.back() != name) commands.push_back(name);
  }
  EXPECT_GE(commands.size(), 10u) << top.out;
  std::vector<Leaf> leaves;
  for (const std::string& command : commands) {
    CommandResult help = Bulkhead({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command << ": " << help.err;
    std::vector<std::string> subcommands;
    for (const std::string& line : Block(help.out, "subcommands:")) {
      subcommands.push_back(Words(line).front());
    }
    if (subcommands.empty()) {
      leaves.push_back({command, UsageLine({command, "--help"})});
    }
    for (const std::string& sub : subcommands) {
      leaves.push_back({command + " " + sub, UsageLine({command, sub, "--help"})});
    }
  }
  return leaves;
}

// The doc's table of commands: its rows "| [`channel pause CHANNEL`](#channel-pause) | …",
// each as "command" or, for a verb made of subcommands, "command subcommand".
std::set<std::string> DocTableCommands(const std::string& doc,
                                       const std::set<std::string>& verbs_with_subcommands) {
  std::set<std::string> names;
  for (const std::string& line : Lines(doc)) {
    if (!line.starts_with("| [`")) continue;
    std::vector<std::string> words = Words(line.substr(4));
    std::string name = words.at(0);
    if (verbs_with_subcommands.contains(name) && words.size() > 1) name += " " + words[1];
    names.insert(name);
  }
  return names;
}

// The synopses in the doc's code blocks: lines "bulkhead <command> …" that are not output
// ("bulkhead channel pause: CHANNEL must be …" names a command and a colon).
std::set<std::string> DocSynopses(const std::string& doc) {
  std::set<std::string> synopses;
  bool in_code = false;
  for (const std::string& line : Lines(doc)) {
    if (line.starts_with("```")) {
      in_code = !in_code;
      continue;
    }
    if (!in_code || !line.starts_with("bulkhead ")) continue;
    std::vector<std::string> words = Words(line);
    bool output = false;
    for (size_t i = 0; i < words.size() && i < 3; ++i) output |= words[i].ends_with(":");
    if (!output) synopses.insert(line);
  }
  return synopses;
}

TEST(CliDocs, TheDocsTableNamesEveryCommandOfTheBinaryAndNoOther) {
  std::vector<Leaf> leaves = BinaryCommands();
  std::set<std::string> binary;
  std::set<std::string> verbs_with_subcommands;
  for (const Leaf& leaf : leaves) {
    binary.insert(leaf.name);
    if (leaf.name.find(' ') != std::string::npos) {
      verbs_with_subcommands.insert(leaf.name.substr(0, leaf.name.find(' ')));
    }
  }
  const std::string doc = ReadSourceFile("docs/cli.md");
  std::set<std::string> documented = DocTableCommands(doc, verbs_with_subcommands);
  for (const std::string& name : binary) {
    EXPECT_TRUE(documented.contains(name)) << "docs/cli.md's table lacks `bulkhead " << name << "`";
  }
  for (const std::string& name : documented) {
    EXPECT_TRUE(binary.contains(name))
        << "docs/cli.md's table names `bulkhead " << name << "`, which the binary does not have";
  }
}

TEST(CliDocs, TheDocGivesEachCommandsUsageLineAsItsHelpPrintsIt) {
  std::vector<Leaf> leaves = BinaryCommands();
  std::set<std::string> usages;
  for (const Leaf& leaf : leaves) usages.insert(leaf.usage);
  std::set<std::string> synopses = DocSynopses(ReadSourceFile("docs/cli.md"));
  for (const Leaf& leaf : leaves) {
    EXPECT_TRUE(synopses.contains(leaf.usage)) << "docs/cli.md has no synopsis `" << leaf.usage
                                               << "` (bulkhead " << leaf.name << " --help)";
  }
  for (const std::string& synopsis : synopses) {
    EXPECT_TRUE(usages.contains(synopsis))
        << "docs/cli.md gives the synopsis `" << synopsis << "`, which no --help prints";
  }
}

}  // namespace
}  // namespace bulkhead
