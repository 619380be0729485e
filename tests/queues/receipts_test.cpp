#include <catch2/catch.hpp>

#include "quern/detail/receipts.hpp"

using quern::detail::prefix_receipts;

TEST_CASE("receipts: only the longest prefix done with is confirmed") {
  prefix_receipts r;
  CHECK(r.arrive(8) == 1); // a run's pull: units 1..8
  CHECK(r.arrive(8) == 9); // the next run's: 9..16
  CHECK(r.arrive(1) == 17);
  uint64_t n = 0;
  CHECK_FALSE(r.tell(n)); // nothing done with yet
  r.release(9, 8);        // the second run was stored first
  CHECK(r.confirmed() == 0);
  CHECK_FALSE(r.tell(n));
  r.release(1, 8); // now both are
  CHECK(r.confirmed() == 16);
  REQUIRE(r.tell(n));
  CHECK(n == 16);
  CHECK_FALSE(r.tell(n)); // told once
  r.release(17, 1);
  REQUIRE(r.tell(n));
  CHECK(n == 17);
}

TEST_CASE("receipts: releases in pieces, twice, or of nothing confirm nothing more") {
  prefix_receipts r;
  r.arrive(10);
  r.release(4, 3); // 4..6
  r.release(2, 1); // 2
  CHECK(r.confirmed() == 0);
  r.release(1, 1); // 1..2 done, 3 not
  CHECK(r.confirmed() == 2);
  r.release(3, 1); // 1..6
  CHECK(r.confirmed() == 6);
  r.release(1, 6); // again: no change
  r.release(7, 0); // of nothing
  CHECK(r.confirmed() == 6);
  r.release(5, 4); // overlaps what is done: 1..8
  CHECK(r.confirmed() == 8);
}

TEST_CASE("receipts: release_all confirms every unit that came") {
  prefix_receipts r;
  r.arrive(3);
  r.release(3, 1);
  r.release_all();
  CHECK(r.confirmed() == 3);
  uint64_t n = 0;
  REQUIRE(r.tell(n));
  CHECK(n == 3);
  CHECK(r.arrive(2) == 4); // numbering goes on
  r.release(4, 2);
  CHECK(r.confirmed() == 5);
}
