# quern_soak: minutes of a pipeline under random failures and stops, with
# exact accounting (`make soak`). Not a CTest test: too long for `make test`.
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(quern_soak ${CMAKE_CURRENT_LIST_DIR}/soak.cpp)
target_link_libraries(quern_soak PRIVATE quern::actors Boost::program_options quern_warnings)
