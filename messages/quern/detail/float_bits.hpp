#pragma once

// Floats and doubles as they cross processes: their IEEE 754 bits, as an
// unsigned integer. CAF 0.17's serializer packs a float by halving it until
// it is below 2 (caf::detail::pack754), which infinity never is: a message
// holding an inf (a loss that diverged, a histogram's last bucket limit)
// would never leave its process, and the middleman's thread would spin. The
// bits also keep every NaN payload and -0 as they were. Other inspectors
// (to_string) see the value itself.

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/serializer.hpp>

namespace quern::detail {

template <class T>
struct float_bits {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  using bits_type = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  T& value;
};

template <class T>
float_bits(T&) -> float_bits<T>;

template <class Inspector>
constexpr bool is_wire_inspector = std::is_base_of_v<caf::serializer, Inspector> ||
                                   std::is_base_of_v<caf::deserializer, Inspector>;

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, float_bits<T>& x) {
  if constexpr (!is_wire_inspector<Inspector>) {
    return f(x.value);
  } else {
    typename float_bits<T>::bits_type bits = 0;
    if constexpr (Inspector::reads_state) {
      std::memcpy(&bits, &x.value, sizeof bits);
      return f(bits);
    } else {
      auto load = [&]() -> caf::error {
        std::memcpy(&x.value, &bits, sizeof bits);
        return caf::none;
      };
      return f(bits, caf::meta::load_callback(load));
    }
  }
}

/// A vector of floats or doubles, each as its bits.
template <class T>
struct float_bits_vector {
  std::vector<T>& values;
};

template <class T>
float_bits_vector(std::vector<T>&) -> float_bits_vector<T>;

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, float_bits_vector<T>& x) {
  if constexpr (!is_wire_inspector<Inspector>) {
    return f(x.values);
  } else {
    using bits_type = typename float_bits<T>::bits_type;
    std::vector<bits_type> bits;
    if constexpr (Inspector::reads_state) {
      bits.resize(x.values.size());
      if (!bits.empty())
        std::memcpy(bits.data(), x.values.data(), bits.size() * sizeof(bits_type));
      return f(bits);
    } else {
      auto load = [&]() -> caf::error {
        x.values.resize(bits.size());
        if (!bits.empty())
          std::memcpy(x.values.data(), bits.data(), bits.size() * sizeof(bits_type));
        return caf::none;
      };
      return f(bits, caf::meta::load_callback(load));
    }
  }
}

} // namespace quern::detail
