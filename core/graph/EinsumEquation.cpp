// Einsum equation parsing: terms, "..." expansion, the implicit output and
// per-label extents.
#include "EinsumEquation.h"

#include <algorithm>
#include <cctype>

namespace ember::einsum {
namespace {

constexpr std::string_view kEllipsis = "...";

std::vector<std::string> split(const std::string& s, char separator) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == separator)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

/// A term's explicit labels around its optional "...".
struct Term {
  std::string before, after;
  bool hasEllipsis = false;
};

Expected<Term> splitTerm(const std::string& term, const std::string& equation) {
  Term t;
  size_t at = term.find(kEllipsis);
  t.hasEllipsis = at != std::string::npos;
  t.before = t.hasEllipsis ? term.substr(0, at) : term;
  t.after = t.hasEllipsis ? term.substr(at + kEllipsis.size()) : "";
  for (const std::string* part : {&t.before, &t.after})
    for (char c : *part)
      if (!std::isalpha(uint8_t(c)))
        return makeError("Einsum: equation '", equation, "' has an unexpected character '", c, "'");
  return t;
}

/// Letters for the `rank` dims of "...": the last capitals no label of the
/// equation uses, in order.
Expected<std::string> labelsForEllipsis(const std::string& text, size_t rank, const std::string& equation) {
  std::string used;
  for (char c : text)
    if (std::isalpha(uint8_t(c))) used += c;
  std::string labels;
  for (char c = 'Z'; c >= 'A' && labels.size() < rank; --c)
    if (used.find(c) == std::string::npos) labels += c;
  std::reverse(labels.begin(), labels.end());
  if (labels.size() < rank)
    return makeError("Einsum: equation '", equation, "' leaves too few letters for '...'");
  return labels;
}

/// The implicit output: the broadcast dims, then the labels used exactly
/// once, in alphabetical order.
std::string implicitOutput(const std::string& lhs, const std::string& ellipsisLabels) {
  std::string once;
  for (char c = 'A'; c <= 'z'; ++c) {
    if (!std::isalpha(uint8_t(c)) || ellipsisLabels.find(c) != std::string::npos) continue;
    if (std::count(lhs.begin(), lhs.end(), c) == 1) once += c;
  }
  return ellipsisLabels + once;
}

/// Records the extent of each label of input i; a label repeated within
/// the input (a diagonal) or with two extents is an error.
Error addOperandLabels(const std::string& equation, size_t i, const std::string& labels, const Dims& dims,
                       Equation& eq) {
  for (size_t d = 0; d < labels.size(); ++d) {
    const char label = labels[d];
    if (labels.find(label) != d)
      return makeError("Einsum: equation '", equation, "' repeats label '", label, "' in input ", i,
                       " (a diagonal), which is not supported");
    int64_t& size = eq.sizes[size_t(uint8_t(label))];
    if (size >= 0 && size != dims[d])
      return makeError("Einsum: label '", label, "' of equation '", equation, "' has extents ", size, " and ",
                       dims[d], " (broadcasting a label is not supported)");
    size = dims[d];
  }
  return Error::success();
}

/// An explicit output names each label once, and only labels of the inputs.
Error checkOutputLabels(const std::string& equation, const Equation& eq) {
  for (size_t d = 0; d < eq.output.size(); ++d) {
    const char label = eq.output[d];
    if (eq.output.find(label) != d)
      return makeError("Einsum: equation '", equation, "' repeats output label '", label, "'");
    if (eq.size(label) < 0)
      return makeError("Einsum: output label '", label, "' of equation '", equation, "' appears in no input");
  }
  return Error::success();
}

}  // namespace

Expected<Equation> parse(const std::string& equation, const std::vector<Dims>& dims) {
  std::string text;
  for (char c : equation)
    if (!std::isspace(uint8_t(c))) text += c;
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  const bool explicitOutput = arrow != std::string::npos;
  const std::vector<std::string> terms = split(lhs, ',');
  if (terms.size() != dims.size())
    return makeError("Einsum: equation '", equation, "' has ", terms.size(),
                     " operand terms but the node has ", dims.size(), " inputs");

  std::vector<Term> parsed;
  size_t ellipsisRank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(Term t, splitTerm(terms[i], equation));
    const size_t named = t.before.size() + t.after.size();
    if (named > dims[i].size() || (!t.hasEllipsis && named != dims[i].size()))
      return makeError("Einsum: term '", terms[i], "' of equation '", equation, "' does not match input ", i,
                       " of rank ", dims[i].size());
    if (t.hasEllipsis) ellipsisRank = std::max(ellipsisRank, dims[i].size() - named);
    parsed.push_back(std::move(t));
  }
  EMBER_ASSIGN_OR_RETURN(const std::string ellipsisLabels, labelsForEllipsis(text, ellipsisRank, equation));

  Equation eq;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Term& t = parsed[i];
    const size_t broadcastDims = dims[i].size() - t.before.size() - t.after.size();
    std::string labels = t.before + ellipsisLabels.substr(ellipsisRank - broadcastDims) + t.after;
    EMBER_RETURN_IF_ERROR(addOperandLabels(equation, i, labels, dims[i], eq));
    eq.operands.push_back(std::move(labels));
  }

  if (explicitOutput) {
    EMBER_ASSIGN_OR_RETURN(Term out, splitTerm(text.substr(arrow + 2), equation));
    eq.output = out.before + (out.hasEllipsis ? ellipsisLabels : "") + out.after;
    EMBER_RETURN_IF_ERROR(checkOutputLabels(equation, eq));
  } else {
    eq.output = implicitOutput(lhs, ellipsisLabels);
  }
  return eq;
}

}  // namespace ember::einsum
