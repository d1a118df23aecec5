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

  // Labels the equation uses, so that "..." gets letters of its own.
  std::string used;
  for (char c : text)
    if (std::isalpha(uint8_t(c))) used += c;

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
  std::string ellipsisLabels;
  for (char c = 'Z'; c >= 'A' && ellipsisLabels.size() < ellipsisRank; --c)
    if (used.find(c) == std::string::npos) ellipsisLabels += c;
  std::reverse(ellipsisLabels.begin(), ellipsisLabels.end());
  if (ellipsisLabels.size() < ellipsisRank)
    return makeError("Einsum: equation '", equation, "' leaves too few letters for '...'");

  Equation eq;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Term& t = parsed[i];
    const size_t broadcastDims = dims[i].size() - t.before.size() - t.after.size();
    std::string labels = t.before + ellipsisLabels.substr(ellipsisRank - broadcastDims) + t.after;
    for (size_t d = 0; d < labels.size(); ++d) {
      const char label = labels[d];
      if (labels.find(label) != d)
        return makeError("Einsum: equation '", equation, "' repeats label '", label, "' in input ", i,
                         " (a diagonal), which is not supported");
      int64_t& size = eq.sizes[size_t(uint8_t(label))];
      if (size >= 0 && size != dims[i][d])
        return makeError("Einsum: label '", label, "' of equation '", equation, "' has extents ", size,
                         " and ", dims[i][d], " (broadcasting a label is not supported)");
      size = dims[i][d];
    }
    eq.operands.push_back(std::move(labels));
  }

  if (explicitOutput) {
    EMBER_ASSIGN_OR_RETURN(Term out, splitTerm(text.substr(arrow + 2), equation));
    eq.output = out.before + (out.hasEllipsis ? ellipsisLabels : "") + out.after;
    for (size_t d = 0; d < eq.output.size(); ++d) {
      const char label = eq.output[d];
      if (eq.output.find(label) != d)
        return makeError("Einsum: equation '", equation, "' repeats output label '", label, "'");
      if (eq.size(label) < 0)
        return makeError("Einsum: output label '", label, "' of equation '", equation,
                         "' appears in no input");
    }
  } else {
    // Implicit output: the broadcast dims, then the labels used exactly once, in alphabetical order.
    std::string once;
    for (char c = 'A'; c <= 'z'; ++c) {
      if (!std::isalpha(uint8_t(c)) || ellipsisLabels.find(c) != std::string::npos) continue;
      if (std::count(lhs.begin(), lhs.end(), c) == 1) once += c;
    }
    eq.output = ellipsisLabels + once;
  }
  return eq;
}

}  // namespace ember::einsum
