file(GLOB quern_coordination_test_sources CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_coordination
  SOURCES ${quern_coordination_test_sources}
  LIBS quern::coordination)
