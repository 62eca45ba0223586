// Geohashing for the geo commands (server/commands/geo.cpp), computing exactly what Redis 7.0
// computes, so that scores, coordinates, distances and search results agree with it to the bit.
//
// The encoding: a point's longitude and latitude are each scaled to a 26-bit cell number (the
// latitude over -85.05112878..85.05112878, the Web Mercator limits, not -90..90) and interleaved,
// latitude bits at the even positions and longitude bits at the odd ones (a Morton code). The
// 52-bit result is the member's score in the sorted set: a double holds it exactly, and points in
// one cell of any coarser grid (the first 2s bits) form one contiguous score range.
//
// A search (GEOSEARCH, GEORADIUS) picks the grid level at which a cell is about as large as the
// search radius (estimate_steps), takes the cell of the centre and its 8 neighbours (dropping the
// neighbours that the search box cannot reach), and scans the score range of each; every point
// found is then checked exactly against the circle (haversine distance on a sphere of radius
// 6372797.560856 m) or the box. Redis's arithmetic is reproduced operation by operation (the
// same products in the same order, the same clamps, 32-bit cell numbers that wrap); it was
// checked against redis-server 7.0.15's machine code. Do not "simplify" a formula here: a
// different rounding moves a distance's fourth decimal or a point across a search border.
//
// Floating point: plain IEEE double arithmetic, no fused multiply-add (x86-64's baseline ISA has
// none; a build with -march=native and FMA contraction would have to pass -ffp-contract=off).
// Thread safety: pure functions of their arguments.
#pragma once

#include <cmath>
#include <cstdint>

namespace kvlab::server::geo {

inline constexpr double kLonMin = -180;
inline constexpr double kLonMax = 180;
inline constexpr double kLatMin = -85.05112878;
inline constexpr double kLatMax = 85.05112878;
inline constexpr int kStepMax = 26;                     // 26 bits per coordinate: 52-bit scores
inline constexpr double kEarthRadius = 6372797.560856;  // metres, as Redis
inline constexpr double kMercatorMax = 20037726.37;     // half the equator in Web Mercator, metres
inline constexpr double kDegToRad = 3.14159265358979323846 / 180.0;

struct Range {
  double min = 0, max = 0;
};
inline constexpr Range kLonRange{kLonMin, kLonMax};
inline constexpr Range kLatRange{kLatMin, kLatMax};

// A cell: the interleaved cell numbers of one grid level (step bits per coordinate).
struct Cell {
  std::uint64_t bits = 0;
  std::uint8_t step = 0;
  bool zero() const { return bits == 0 && step == 0; }  // "no cell" (a dropped neighbour)
  bool operator==(const Cell&) const = default;
};

struct Area {
  Cell cell;
  Range lon, lat;
};

inline double deg_rad(double deg) {
  return deg * kDegToRad;
}
inline double rad_deg(double rad) {
  return rad / kDegToRad;
}

// The 32 bits of v moved to the even bit positions of the result.
inline std::uint64_t spread_bits(std::uint32_t v) {
  std::uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  x = (x | (x << 1)) & 0x5555555555555555ULL;
  return x;
}
// The even bits of x gathered into 32 bits (the inverse of spread_bits).
inline std::uint32_t gather_bits(std::uint64_t x) {
  x &= 0x5555555555555555ULL;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<std::uint32_t>(x);
}

// A score as Redis turns it into 64 bits: C's (uint64_t) cast as gcc compiles it on x86-64
// (values from 2^63 up are converted after subtracting 2^63; cvttsd2si answers INT64_MIN for
// anything out of its range, NaN included). Scores that ZADD stored (negative, huge, infinite)
// therefore decode to the same odd places as in Redis, instead of undefined behaviour.
inline std::uint64_t score_bits(double score) {
  constexpr double kTwo63 = 9223372036854775808.0;
  constexpr std::uint64_t kIndefinite = 0x8000000000000000ULL;
  auto cvt = [](double v) -> std::uint64_t {
    return (v >= -kTwo63 && v < kTwo63) ? static_cast<std::uint64_t>(static_cast<std::int64_t>(v))
                                        : kIndefinite;
  };
  if (score >= kTwo63) return cvt(score - kTwo63) ^ kIndefinite;
  return cvt(score);
}

// The cell of (lon, lat) at `step` bits per coordinate over the given ranges. False (no cell)
// outside the WGS84/Mercator limits (whatever the ranges) or outside the ranges.
inline bool encode(Range lon_range, Range lat_range, double lon, double lat, int step, Cell* out) {
  if (step <= 0 || step > 32) return false;
  if (lon > kLonMax || lon < kLonMin || lat > kLatMax || lat < kLatMin) return false;
  out->bits = 0;
  out->step = static_cast<std::uint8_t>(step);
  if (lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max)
    return false;
  double lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min);
  double lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min);
  const double cells = static_cast<double>(1ULL << step);
  lat_offset *= cells;
  lon_offset *= cells;
  // Offsets are in [0, 2^step]: the conversions are exact truncations (2^step itself is a cell
  // number one past the grid, as in Redis: a longitude of exactly 180 sets bit 2*step+1).
  const auto ilat = static_cast<std::uint32_t>(static_cast<std::int64_t>(lat_offset));
  const auto ilon = static_cast<std::uint32_t>(static_cast<std::int64_t>(lon_offset));
  out->bits = spread_bits(ilat) | (spread_bits(ilon) << 1);
  return true;
}

// The rectangle covered by a cell. The "+ 1" is 32-bit arithmetic, as in Redis: a cell number of
// 2^32 - 1 (only from scores that GEOADD never writes) wraps to 0.
inline bool decode(Range lon_range, Range lat_range, Cell c, Area* area) {
  if (c.zero()) return false;
  area->cell = c;
  const std::uint32_t ilat = gather_bits(c.bits);
  const std::uint32_t ilon = gather_bits(c.bits >> 1);
  const double lat_scale = lat_range.max - lat_range.min;
  const double lon_scale = lon_range.max - lon_range.min;
  const double cells = static_cast<double>(1ULL << c.step);
  const std::uint32_t ilat1 = ilat + 1u, ilon1 = ilon + 1u;
  area->lat.min = lat_range.min + (ilat * 1.0 / cells) * lat_scale;
  area->lat.max = lat_range.min + (ilat1 * 1.0 / cells) * lat_scale;
  area->lon.min = lon_range.min + (ilon * 1.0 / cells) * lon_scale;
  area->lon.max = lon_range.min + (ilon1 * 1.0 / cells) * lon_scale;
  return true;
}

// The centre of an area, clamped to the WGS84/Mercator limits: xy = {longitude, latitude}.
inline void area_center(const Area& a, double* xy) {
  xy[0] = (a.lon.min + a.lon.max) / 2;
  if (xy[0] > kLonMax) xy[0] = kLonMax;
  if (xy[0] < kLonMin) xy[0] = kLonMin;
  xy[1] = (a.lat.min + a.lat.max) / 2;
  if (xy[1] > kLatMax) xy[1] = kLatMax;
  if (xy[1] < kLatMin) xy[1] = kLatMin;
}

// The position a sorted-set score stands for (any score: see score_bits).
inline bool decode_score(double score, double* xy) {
  Area a;
  if (!decode(kLonRange, kLatRange, Cell{score_bits(score), kStepMax}, &a)) return false;
  area_center(a, xy);
  return true;
}

// The 52-bit score of a position. REQUIRES: lon, lat within the limits.
inline std::uint64_t encode_score(double lon, double lat) {
  Cell c;
  encode(kLonRange, kLatRange, lon, lat, kStepMax, &c);
  return c.bits << (52 - 2 * c.step);
}

// The score range [min, max) of the points inside cell c.
inline void cell_scores(Cell c, double* min, double* max) {
  const int shift = 52 - 2 * c.step;
  *min = static_cast<double>(c.bits << shift);
  *max = static_cast<double>((c.bits + 1) << shift);
}

// Neighbouring cells: longitude lives in the odd bits, latitude in the even bits; moving adds or
// subtracts one in one of them, wrapping around the grid (east of the last column is the first).
inline Cell move_lon(Cell c, int d) {
  const int shift = 64 - 2 * c.step;
  std::uint64_t x = c.bits & 0xAAAAAAAAAAAAAAAAULL;
  const std::uint64_t y = c.bits & 0x5555555555555555ULL;
  const std::uint64_t fill = 0x5555555555555555ULL >> shift;  // the other coordinate's bits
  if (d > 0) {
    x = x + (fill + 1);
  } else {
    x = x | fill;
    x = x - (fill + 1);
  }
  x &= 0xAAAAAAAAAAAAAAAAULL >> shift;
  c.bits = x | y;
  return c;
}
inline Cell move_lat(Cell c, int d) {
  const int shift = 64 - 2 * c.step;
  const std::uint64_t x = c.bits & 0xAAAAAAAAAAAAAAAAULL;
  std::uint64_t y = c.bits & 0x5555555555555555ULL;
  const std::uint64_t fill = 0xAAAAAAAAAAAAAAAAULL >> shift;
  if (d > 0) {
    y = y + (fill + 1);
  } else {
    y = y | fill;
    y = y - (fill + 1);
  }
  y &= 0x5555555555555555ULL >> shift;
  c.bits = x | y;
  return c;
}

struct Neighbors {
  Cell north, east, west, south, north_east, south_east, north_west, south_west;
};
inline Neighbors neighbors(Cell c) {
  Neighbors n;
  n.east = move_lon(c, 1);
  n.west = move_lon(c, -1);
  n.south = move_lat(c, -1);
  n.north = move_lat(c, 1);
  n.north_west = move_lat(move_lon(c, -1), 1);
  n.south_west = move_lat(move_lon(c, -1), -1);
  n.north_east = move_lat(move_lon(c, 1), 1);
  n.south_east = move_lat(move_lon(c, 1), -1);
  return n;
}

// Distance along a meridian (the haversine reduces to this when the longitudes are equal).
inline double lat_distance(double lat1, double lat2) {
  return kEarthRadius * std::fabs(deg_rad(lat2) - deg_rad(lat1));
}

// Great-circle distance in metres (haversine on a sphere of radius kEarthRadius).
inline double distance(double lon1, double lat1, double lon2, double lat2) {
  const double lon1r = deg_rad(lon1);
  const double lon2r = deg_rad(lon2);
  const double v = std::sin((lon2r - lon1r) / 2);
  if (v == 0.0) return lat_distance(lat1, lat2);
  const double lat1r = deg_rad(lat1);
  const double lat2r = deg_rad(lat2);
  const double u = std::sin((lat2r - lat1r) / 2);
  const double a = u * u + std::cos(lat1r) * std::cos(lat2r) * v * v;
  return 2.0 * kEarthRadius * std::asin(std::sqrt(a));
}

// The grid level whose cells are about as large as range_m around latitude lat: cells halve in
// size per level from the whole Mercator width; two levels coarser so that the 3x3 cells cover
// the range in most cases, one or two more near the poles where meridians converge.
inline int estimate_steps(double range_m, double lat) {
  if (range_m == 0) return kStepMax;
  int step = 1;
  while (range_m < kMercatorMax) {
    range_m *= 2;
    step++;
  }
  step -= 2;
  if (lat > 66 || lat < -66) {
    step--;
    if (lat > 80 || lat < -80) step--;
  }
  if (step < 1) step = 1;
  if (step > kStepMax) step = kStepMax;
  return step;
}

// A search shape: a circle of `radius` or a box of width x height (in the unit whose size in
// metres is `conversion`) around xy = {longitude, latitude}.
struct Shape {
  enum Kind { kCircle, kBox } kind = kCircle;
  double xy[2] = {0, 0};
  double conversion = 1;
  double radius = 0;
  double width = 0, height = 0;
};

// The shape's bounding box {min_lon, min_lat, max_lon, max_lat}: the longitude span is taken at
// the latitude edge farther from the equator, where it is widest.
inline void bounding_box(const Shape& s, double* bounds) {
  const double lon = s.xy[0], lat = s.xy[1];
  const double height = s.conversion * (s.kind == Shape::kCircle ? s.radius : s.height / 2);
  const double width = s.conversion * (s.kind == Shape::kCircle ? s.radius : s.width / 2);
  const double lat_delta = rad_deg(height / kEarthRadius);
  const double lon_delta_top = rad_deg(width / kEarthRadius / std::cos(deg_rad(lat + lat_delta)));
  const double lon_delta_bottom =
      rad_deg(width / kEarthRadius / std::cos(deg_rad(lat - lat_delta)));
  const bool southern = lat < 0;
  bounds[0] = southern ? lon - lon_delta_bottom : lon - lon_delta_top;
  bounds[2] = southern ? lon + lon_delta_bottom : lon + lon_delta_top;
  bounds[1] = lat - lat_delta;
  bounds[3] = lat + lat_delta;
}

// The cells a search scans, in Redis's order: the centre's cell, then north, south, east, west,
// north-east, north-west, south-east, south-west; a dropped neighbour is zero().
struct SearchCells {
  Cell cells[9];
};

inline SearchCells search_cells(const Shape& s) {
  double bounds[4];
  bounding_box(s, bounds);
  const double min_lon = bounds[0], min_lat = bounds[1], max_lon = bounds[2], max_lat = bounds[3];
  const double lon = s.xy[0], lat = s.xy[1];
  // A box is reached up to its corners.
  double radius_m =
      s.kind == Shape::kCircle
          ? s.radius
          : std::sqrt((s.width / 2) * (s.width / 2) + (s.height / 2) * (s.height / 2));
  radius_m *= s.conversion;

  int steps = estimate_steps(radius_m, lat);
  Cell c;
  encode(kLonRange, kLatRange, lon, lat, steps, &c);
  Neighbors n = neighbors(c);
  Area area;
  decode(kLonRange, kLatRange, c, &area);

  // Near a cell border the estimated level can be one too fine: a neighbour would not reach the
  // far edge of the search area. Then go one level coarser.
  bool decrease = false;
  {
    Area north, south, east, west;
    decode(kLonRange, kLatRange, n.north, &north);
    decode(kLonRange, kLatRange, n.south, &south);
    decode(kLonRange, kLatRange, n.east, &east);
    decode(kLonRange, kLatRange, n.west, &west);
    if (north.lat.max < max_lat) decrease = true;
    if (south.lat.min > min_lat) decrease = true;
    if (east.lon.max < max_lon) decrease = true;
    if (west.lon.min > min_lon) decrease = true;
  }
  if (steps > 1 && decrease) {
    steps--;
    encode(kLonRange, kLatRange, lon, lat, steps, &c);
    n = neighbors(c);
    decode(kLonRange, kLatRange, c, &area);
  }

  // Neighbours beyond the bounding box on a side hold nothing the search wants.
  if (steps >= 2) {
    if (area.lat.min < min_lat) n.south = n.south_west = n.south_east = Cell{};
    if (area.lat.max > max_lat) n.north = n.north_east = n.north_west = Cell{};
    if (area.lon.min < min_lon) n.west = n.south_west = n.north_west = Cell{};
    if (area.lon.max > max_lon) n.east = n.south_east = n.north_east = Cell{};
  }
  return SearchCells{{c, n.north, n.south, n.east, n.west, n.north_east, n.north_west, n.south_east,
                      n.south_west}};
}

// Whether the point (lon, lat) is inside the shape; *dist is its distance from the centre in
// metres (set when inside, and for a circle always).
inline bool within(const Shape& s, double lon, double lat, double* dist) {
  if (s.kind == Shape::kCircle) {
    *dist = distance(s.xy[0], s.xy[1], lon, lat);
    return !(*dist > s.radius * s.conversion);
  }
  const double width_m = s.width * s.conversion, height_m = s.height * s.conversion;
  // The latitude test first: it is the cheaper one.
  if (lat_distance(lat, s.xy[1]) > height_m / 2) return false;
  if (distance(lon, lat, s.xy[0], lat) > width_m / 2) return false;
  *dist = distance(s.xy[0], s.xy[1], lon, lat);
  return true;
}

}  // namespace kvlab::server::geo
