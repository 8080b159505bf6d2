// Parses an SVG file with a real XML parser (expat) for the plot tests.

#ifndef ZEUS_TESTS_TESTING_SVG_DOCUMENT_H_
#define ZEUS_TESTS_TESTING_SVG_DOCUMENT_H_

#include <string>
#include <vector>

#include "zeus/status.h"

namespace zeus::testing {

struct SvgDocument {
  // The root element's name ("svg" for an SVG file).
  std::string root;
  // Text of every <title> element (gnuplot: "gnuplot_plot_N" per series), in
  // document order.
  std::vector<std::string> titles;
  // Text of every <text> element (figure title, axis labels, key entries,
  // tick labels), in document order.
  std::vector<std::string> texts;
  // Number of <path> elements.
  int paths = 0;

  bool HasTitle(const std::string& title) const;
  // True when some <text> contains `fragment`.
  bool HasText(const std::string& fragment) const;
};

// kInvalidArgument with expat's message and line when `xml` is not
// well-formed.
StatusOr<SvgDocument> ParseSvg(const std::string& xml);

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_TESTING_SVG_DOCUMENT_H_
