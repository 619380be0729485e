file(GLOB quern_queue_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_queues
  SOURCES ${quern_queue_test_sources}
  LIBS quern::queues)
# row_pool_test.cpp tests RandomShuffleQueue's storage (queues/src/kinds/), a private part of queues/.
target_include_directories(quern_test_queues PRIVATE ${PROJECT_SOURCE_DIR}/queues/src)
