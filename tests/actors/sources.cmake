file(GLOB quern_actor_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_queues
  SOURCES ${quern_actor_test_sources}
  LIBS quern::actors)
# row_pool_test.cpp tests RandomShuffleQueue's storage (actors/src/kinds/), a private part of actors/.
target_include_directories(quern_test_queues PRIVATE ${PROJECT_SOURCE_DIR}/actors/src)
