file(GLOB quern_input_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_input
  SOURCES ${quern_input_test_sources}
  LIBS quern::input)
