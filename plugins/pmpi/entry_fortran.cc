// The Fortran entry points (mpif.h and `use mpi`). OpenMPI's Fortran bindings call PMPI_ C
// functions directly, so a program calling MPI_ALLREDUCE from Fortran never reaches the C
// MPI_Allreduce: the shim exports the Fortran symbols too, in the four manglings OpenMPI itself
// exports (mpi_x_, mpi_x__, mpi_x, MPI_X). Handles are converted the way OpenMPI's own bindings
// convert them (f2c, MPI_IN_PLACE and MPI_BOTTOM), so the calls that pass through behave exactly
// as they would without the shim.
#include <dlfcn.h>

#include "shim.h"

// OpenMPI's Fortran MPI_IN_PLACE and MPI_BOTTOM are the addresses of these common blocks (see
// OMPI_IS_FORTRAN_IN_PLACE in OpenMPI's fortran/base/constants.h). Weak: absent symbols are null.
extern "C" {
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
}

namespace {

bool is_one_of(const void* p, const void* a, const void* b, const void* c, const void* d) {
  return p && (p == a || p == b || p == c || p == d);
}

const void* in_place(const void* buffer) {
  return is_one_of(buffer, &mpi_fortran_in_place_, &mpi_fortran_in_place, &mpi_fortran_in_place__,
                   &MPI_FORTRAN_IN_PLACE)
             ? MPI_IN_PLACE
             : buffer;
}

template <typename T>
T* bottom(T* buffer) {
  return is_one_of(buffer, &mpi_fortran_bottom_, &mpi_fortran_bottom, &mpi_fortran_bottom__,
                   &MPI_FORTRAN_BOTTOM)
             ? static_cast<T*>(MPI_BOTTOM)
             : buffer;
}

// The next definition of a Fortran symbol (OpenMPI's libmpi_mpifh), for MPI_INIT and friends
// whose Fortran versions may do more than their C counterparts.
template <typename Fn>
Fn next_fortran(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

void octet_pmpi_f_init(MPI_Fint* ierr) {
  static auto real = next_fortran<void (*)(MPI_Fint*)>("pmpi_init_");
  static auto real_thread =
      next_fortran<void (*)(MPI_Fint*, MPI_Fint*, MPI_Fint*)>("pmpi_init_thread_");
  MPI_Fint level = octet_pmpi::wanted_thread_level(MPI_THREAD_SINGLE), provided = 0;
  if (real && real_thread && level != MPI_THREAD_SINGLE) {
    real_thread(&level, &provided, ierr);  // see MPI_Init in entry_c.cc
    if (*ierr == MPI_SUCCESS) octet_pmpi::after_init();
  } else if (real) {
    real(ierr);
    if (*ierr == MPI_SUCCESS) octet_pmpi::after_init();
  } else {
    *ierr = MPI_Init(nullptr, nullptr);
  }
}

void octet_pmpi_f_init_thread(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  static auto real = next_fortran<void (*)(MPI_Fint*, MPI_Fint*, MPI_Fint*)>("pmpi_init_thread_");
  if (real) {
    MPI_Fint level = octet_pmpi::wanted_thread_level(*required);
    real(&level, provided, ierr);
    if (*ierr == MPI_SUCCESS) octet_pmpi::after_init();
  } else {
    int c_provided = 0;
    *ierr = MPI_Init_thread(nullptr, nullptr, *required, &c_provided);
    *provided = c_provided;
  }
}

void octet_pmpi_f_finalize(MPI_Fint* ierr) {
  static auto real = next_fortran<void (*)(MPI_Fint*)>("pmpi_finalize_");
  if (!real) {
    *ierr = MPI_Finalize();
    return;
  }
  octet_pmpi::run_step("finalize (report)", octet_pmpi::before_finalize);
  real(ierr);
}

void octet_pmpi_f_comm_set_info(MPI_Fint* comm, MPI_Fint* info, MPI_Fint* ierr) {
  *ierr = MPI_Comm_set_info(PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info));
}

void octet_pmpi_f_allreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type,
                            MPI_Fint* op, MPI_Fint* comm, MPI_Fint* ierr) {
  *ierr = MPI_Allreduce(bottom(in_place(sendbuf)), bottom(recvbuf), *count, PMPI_Type_f2c(*type),
                        PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm));
}

void octet_pmpi_f_iallreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type,
                             MPI_Fint* op, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
  MPI_Request c_request = MPI_REQUEST_NULL;
  *ierr = MPI_Iallreduce(bottom(in_place(sendbuf)), bottom(recvbuf), *count, PMPI_Type_f2c(*type),
                         PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm), &c_request);
  if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);
}

void octet_pmpi_f_reduce_scatter_block(void* sendbuf, void* recvbuf, MPI_Fint* recvcount,
                                       MPI_Fint* type, MPI_Fint* op, MPI_Fint* comm,
                                       MPI_Fint* ierr) {
  *ierr = MPI_Reduce_scatter_block(bottom(in_place(sendbuf)), bottom(recvbuf), *recvcount,
                                   PMPI_Type_f2c(*type), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm));
}

void octet_pmpi_f_allgather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf,
                            MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* comm,
                            MPI_Fint* ierr) {
  *ierr =
      MPI_Allgather(bottom(in_place(sendbuf)), *sendcount, PMPI_Type_f2c(*sendtype),
                    bottom(recvbuf), *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm));
}

void octet_pmpi_f_bcast(void* buffer, MPI_Fint* count, MPI_Fint* type, MPI_Fint* root,
                        MPI_Fint* comm, MPI_Fint* ierr) {
  *ierr = MPI_Bcast(bottom(buffer), *count, PMPI_Type_f2c(*type), *root, PMPI_Comm_f2c(*comm));
}

// The four manglings of each symbol, all aliases of the one implementation above, exported (the
// shim is built with hidden visibility; mpi.h declares the C names visible, nothing the Fortran),
// and OpenMPI's ompi_*_f name, which its `use mpi_f08` bindings call (OpenMPI's own mpif.h
// symbols are aliases of that same function, so the shim replaces it too).
#define OCTET_F_ALIAS(impl) __attribute__((alias(#impl), visibility("default")))
#define OCTET_FORTRAN(impl, params, lower, upper) \
  void lower params OCTET_F_ALIAS(impl);          \
  void lower##_ params OCTET_F_ALIAS(impl);       \
  void lower##__ params OCTET_F_ALIAS(impl);      \
  void upper params OCTET_F_ALIAS(impl);          \
  void o##lower##_f params OCTET_F_ALIAS(impl);

#define F MPI_Fint*
OCTET_FORTRAN(octet_pmpi_f_init, (F), mpi_init, MPI_INIT)
OCTET_FORTRAN(octet_pmpi_f_init_thread, (F, F, F), mpi_init_thread, MPI_INIT_THREAD)
OCTET_FORTRAN(octet_pmpi_f_finalize, (F), mpi_finalize, MPI_FINALIZE)
OCTET_FORTRAN(octet_pmpi_f_comm_set_info, (F, F, F), mpi_comm_set_info, MPI_COMM_SET_INFO)
OCTET_FORTRAN(octet_pmpi_f_allreduce, (void*, void*, F, F, F, F, F), mpi_allreduce, MPI_ALLREDUCE)
OCTET_FORTRAN(octet_pmpi_f_iallreduce, (void*, void*, F, F, F, F, F, F), mpi_iallreduce,
              MPI_IALLREDUCE)
OCTET_FORTRAN(octet_pmpi_f_reduce_scatter_block, (void*, void*, F, F, F, F, F),
              mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK)
OCTET_FORTRAN(octet_pmpi_f_allgather, (void*, F, F, void*, F, F, F, F), mpi_allgather,
              MPI_ALLGATHER)
OCTET_FORTRAN(octet_pmpi_f_bcast, (void*, F, F, F, F, F), mpi_bcast, MPI_BCAST)
#undef F
#undef OCTET_FORTRAN
#undef OCTET_F_ALIAS

}  // extern "C"
