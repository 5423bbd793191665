// The one error type of skeleton handling: it carries the file and the place so messages point at the input.
#pragma once

#include <stdexcept>
#include <string>

namespace mksim::skeletons {

/** @brief A bad skeleton or expression; what() reads "file: place: message". */
class SkeletonError : public std::runtime_error {
 public:
  SkeletonError(const std::string& file, const std::string& place, const std::string& message)
      : std::runtime_error(compose(file, place, message)), file_(file), place_(place) {}
  /** @brief The file the error is in ("" for text not read from a file). */
  const std::string& file() const { return file_; }
  /** @brief JSON pointer (or other locator) of the offending value. */
  const std::string& place() const { return place_; }

 private:
  static std::string compose(const std::string& file, const std::string& place, const std::string& message) {
    std::string s;
    if (!file.empty()) s += file + ": ";
    if (!place.empty()) s += place + ": ";
    return s + message;
  }
  std::string file_;
  std::string place_;
};

}  // namespace mksim::skeletons
