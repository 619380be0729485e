# runtime/ on its own: the blocking client, the command line and the actor
# system's exit policy with plain actors (the policy with queues and runners
# is tested in tests/coordination/exit_policy_test.cpp).
file(GLOB quern_runtime_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_runtime
  SOURCES ${quern_runtime_test_sources}
  LIBS quern::runtime)
