quern_add_test_suite(quern_test_messages
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/tensor_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/serialization_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/byte_pool_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/state_bytes_test.cpp
  LIBS quern::messages)
