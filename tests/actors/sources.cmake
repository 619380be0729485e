file(GLOB quern_actor_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_queues
  SOURCES ${quern_actor_test_sources}
  LIBS quern::actors)
