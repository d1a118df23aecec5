#include "Options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace ember::cli {

OptionParser::OptionParser(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

void OptionParser::addFlag(std::string name, bool* target, std::string help) {
  options_.push_back({std::move(name), "", "", std::move(help), Kind::Flag, target});
}

void OptionParser::addString(std::string name, std::string metavar, std::string* target, std::string help) {
  options_.push_back({std::move(name), "", std::move(metavar), std::move(help), Kind::String, target});
}

void OptionParser::addInt(std::string name, std::string metavar, int64_t* target, std::string help,
                          int64_t min, int64_t max) {
  options_.push_back({std::move(name), "", std::move(metavar), std::move(help), Kind::Int, target, min, max});
}

void OptionParser::addNonNegativeNumber(std::string name, std::string metavar, std::optional<double>* target,
                                        std::string help) {
  options_.push_back({std::move(name), "", std::move(metavar), std::move(help), Kind::Number, target});
}

void OptionParser::addList(std::string name, std::string metavar, std::vector<std::string>* target,
                           std::string help) {
  options_.push_back({std::move(name), "", std::move(metavar), std::move(help), Kind::List, target});
}

void OptionParser::addAlias(std::string shortName, const std::string& longName) {
  Option* option = find(longName);
  if (option) option->shortName = std::move(shortName);
}

void OptionParser::addPositional(std::string metavar, std::string* target, std::string help, bool required) {
  positionals_.push_back({std::move(metavar), target, std::move(help), required});
}

OptionParser::Option* OptionParser::find(const std::string& name) {
  for (Option& option : options_)
    if (option.name == name || (!option.shortName.empty() && option.shortName == name)) return &option;
  return nullptr;
}

bool OptionParser::given(const std::string& name) const {
  return std::find(given_.begin(), given_.end(), name) != given_.end();
}

int OptionParser::usageError(const std::string& message) const {
  std::cerr << command_ << ": " << message << " (see '" << command_ << " --help')\n";
  return kExitUsage;
}

std::optional<int> OptionParser::assign(Option& option, const std::string& value) {
  switch (option.kind) {
    case Kind::Flag:
      *static_cast<bool*>(option.target) = true;
      break;
    case Kind::String:
      *static_cast<std::string*>(option.target) = value;
      break;
    case Kind::List:
      static_cast<std::vector<std::string>*>(option.target)->push_back(value);
      break;
    case Kind::Int: {
      errno = 0;
      char* end = nullptr;
      long long parsed = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE)
        return usageError("option '" + option.name + "' expects an integer, got '" + value + "'");
      if (parsed < option.min || parsed > option.max) {
        std::ostringstream os;
        os << "option '" << option.name << "' must be ";
        if (option.max == std::numeric_limits<int64_t>::max())
          os << "at least " << option.min;
        else
          os << "between " << option.min << " and " << option.max;
        os << ", got " << value;
        return usageError(os.str());
      }
      *static_cast<int64_t*>(option.target) = parsed;
      break;
    }
    case Kind::Number: {
      errno = 0;
      char* end = nullptr;
      const double parsed = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || errno == ERANGE || !(parsed >= 0))
        return usageError(option.name + " expects a non-negative number, got '" + value + "'");
      *static_cast<std::optional<double>*>(option.target) = parsed;
      break;
    }
  }
  given_.push_back(option.name);
  return std::nullopt;
}

std::optional<int> OptionParser::parse(const std::vector<std::string>& args) {
  size_t nextPositional = 0;
  bool onlyPositionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool looksLikeOption = !onlyPositionals && arg.size() > 1 && arg[0] == '-';
    if (!looksLikeOption) {
      if (nextPositional >= positionals_.size()) return usageError("unexpected argument '" + arg + "'");
      *positionals_[nextPositional++].target = arg;
      continue;
    }
    if (arg == "--") {
      onlyPositionals = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::cout << help();
      return kExitSuccess;
    }
    std::string name = arg, value;
    bool hasInlineValue = false;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasInlineValue = true;
    }
    Option* option = find(name);
    if (!option) return usageError("unknown option '" + name + "'");
    if (option->kind == Kind::Flag) {
      if (hasInlineValue) return usageError("option '" + option->name + "' takes no value");
    } else if (!hasInlineValue) {
      if (i + 1 >= args.size())
        return usageError("option '" + option->name + "' needs a value " + option->metavar);
      value = args[++i];
    }
    if (auto status = assign(*option, value)) return status;
  }
  for (size_t i = nextPositional; i < positionals_.size(); ++i)
    if (positionals_[i].required) return usageError("missing " + positionals_[i].metavar);
  return std::nullopt;
}

std::string OptionParser::help() const {
  std::ostringstream os;
  os << "usage: " << command_ << " " << synopsis_ << "\n\n" << description_ << "\n";
  auto row = [&os](const std::string& left, const std::string& text) {
    constexpr size_t kColumn = 28;
    os << "  " << left;
    if (left.size() + 2 >= kColumn)
      os << "\n" << std::string(kColumn, ' ');
    else
      os << std::string(kColumn - 2 - left.size(), ' ');
    os << text << "\n";
  };
  if (!positionals_.empty()) {
    os << "\narguments:\n";
    for (const Positional& p : positionals_) row(p.metavar, p.help);
  }
  os << "\noptions:\n";
  for (const Option& o : options_) {
    std::string left = o.shortName.empty() ? o.name : o.shortName + ", " + o.name;
    if (o.kind != Kind::Flag) left += " " + o.metavar;
    row(left, o.help + (o.kind == Kind::List ? " (repeatable)" : ""));
  }
  row("-h, --help", "show this help and exit");
  return os.str();
}

}  // namespace ember::cli
