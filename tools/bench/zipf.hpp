// A Zipf(n, θ) sampler over ranks 1..n: P(k) = k^-θ / H(n, θ), H(n, θ) = Σ_{i=1..n} i^-θ.
//
// Method: rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to generate
// variates from monotone discrete distributions", ACM TOMACS 6(3), 1996), as in Apache Commons
// RNG's RejectionInversionZipfSampler. It is exact for every θ > 0 (θ = 1 included), needs O(1)
// memory and no O(n) table, and takes ~1.1 iterations of one log/exp pair per sample on average —
// unlike YCSB's Gray et al. generator, which approximates the tail.
//
// Thread safety: a sampler is immutable after construction; sample() takes the caller's uniform
// variate, so one sampler may be shared by many threads, each with its own random generator.
#pragma once

#include <cmath>
#include <cstdint>

namespace kvlab::bench {

class ZipfSampler {
 public:
  // REQUIRES: n >= 1, theta > 0.
  ZipfSampler(std::uint64_t n, double theta)
      : n_(n),
        theta_(theta),
        h_integral_x1_(h_integral(1.5) - 1.0),
        h_integral_n_(h_integral(static_cast<double>(n) + 0.5)),
        s_(2.0 - h_integral_inverse(h_integral(2.5) - h(2.0))) {}

  std::uint64_t n() const { return n_; }
  double theta() const { return theta_; }

  // A rank in [1, n]. `next_unit` returns uniform doubles in [0, 1); it is called once per
  // rejection round (1.0-1.2 times on average).
  template <class UnitFn>
  std::uint64_t sample(UnitFn&& next_unit) const {
    for (;;) {
      const double u = h_integral_n_ + next_unit() * (h_integral_x1_ - h_integral_n_);
      const double x = h_integral_inverse(u);
      double kd = std::floor(x + 0.5);
      if (kd < 1.0) kd = 1.0;
      if (kd > static_cast<double>(n_)) kd = static_cast<double>(n_);
      // Accept when x is close enough to k that the hat equals the target, or by the exact test.
      if (kd - x <= s_ || u >= h_integral(kd + 0.5) - h(kd)) return static_cast<std::uint64_t>(kd);
    }
  }

  // The exact probability of rank k (O(n) for the normalizer; for tests and reports).
  static double probability(std::uint64_t k, std::uint64_t n, double theta) {
    double h = 0;
    for (std::uint64_t i = n; i >= 1; --i) h += std::pow(static_cast<double>(i), -theta);
    return std::pow(static_cast<double>(k), -theta) / h;
  }

 private:
  double h(double x) const { return std::exp(-theta_ * std::log(x)); }
  // ∫ h: (x^(1-θ) - 1) / (1-θ), computed stably near θ = 1.
  double h_integral(double x) const {
    const double log_x = std::log(x);
    return helper2((1.0 - theta_) * log_x) * log_x;
  }
  double h_integral_inverse(double x) const {
    double t = x * (1.0 - theta_);
    if (t < -1.0) t = -1.0;  // rounding guard: the argument of log1p must stay > -1
    return std::exp(helper1(t) * x);
  }
  // log(1+x)/x and (exp(x)-1)/x with their Taylor series near 0.
  static double helper1(double x) {
    if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
    return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
  }
  static double helper2(double x) {
    if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
    return 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x));
  }

  std::uint64_t n_;
  double theta_;
  double h_integral_x1_;
  double h_integral_n_;
  double s_;
};

}  // namespace kvlab::bench
