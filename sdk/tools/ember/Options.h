// A small typed option parser for the `ember` subcommands: long options with
// a value (`--seed 3` or `--seed=3`), flags, repeatable options, short
// aliases (`-o`), positionals, and a generated `--help`.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace ember::cli {

/// Exit statuses of every subcommand (docs/cli.md).
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;  ///< bad input, unsupported model, I/O error
inline constexpr int kExitUsage = 2;    ///< bad command line, or a feature not available yet

class OptionParser {
 public:
  /// `command` is "ember run"; `synopsis` follows it in the usage line.
  OptionParser(std::string command, std::string synopsis, std::string description);

  void addFlag(std::string name, bool* target, std::string help);
  void addString(std::string name, std::string metavar, std::string* target, std::string help);
  /// An integer option checked against [min, max].
  void addInt(std::string name, std::string metavar, int64_t* target, std::string help, int64_t min = 0,
              int64_t max = std::numeric_limits<int64_t>::max());
  /// A non-negative real number (a tolerance); left empty when not given.
  void addNonNegativeNumber(std::string name, std::string metavar, std::optional<double>* target,
                            std::string help);
  /// A repeatable option; every occurrence is appended.
  void addList(std::string name, std::string metavar, std::vector<std::string>* target, std::string help);
  /// `shortName` ("-o") means the same as the long option `longName`.
  void addAlias(std::string shortName, const std::string& longName);
  /// Positional arguments are filled in the order they are declared.
  void addPositional(std::string metavar, std::string* target, std::string help, bool required = true);

  /// Parses `args` (the words after the subcommand). Returns nothing when the
  /// command should go on; otherwise the exit status after printing the help
  /// (0) or a one-line error on stderr (kExitUsage).
  std::optional<int> parse(const std::vector<std::string>& args);

  /// Whether the option `name` was given on the command line.
  bool given(const std::string& name) const;
  std::string help() const;
  /// Prints "ember run: <message>" to stderr and returns kExitUsage.
  int usageError(const std::string& message) const;

 private:
  enum class Kind { Flag, String, Int, Number, List };
  struct Option {
    std::string name;
    std::string shortName;
    std::string metavar;
    std::string help;
    Kind kind;
    void* target;
    int64_t min = 0, max = 0;
  };
  struct Positional {
    std::string metavar;
    std::string* target;
    std::string help;
    bool required;
  };

  Option* find(const std::string& name);
  std::optional<int> assign(Option& option, const std::string& value);

  std::string command_, synopsis_, description_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  std::vector<std::string> given_;
};

}  // namespace ember::cli
