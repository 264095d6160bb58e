! An ordinary Fortran 2008 MPI program (`use mpi_f08`), not written against Octet: OpenMPI's
! mpi_f08 bindings reach the library through ompi_*_f functions, which the PMPI shim replaces.
! Each REAL sum must be within T * nranks of the exact sum and identical on every rank. (The exact
! sum is computed here: under mpi_f08 OpenMPI sends PMPI_Allreduce through the same ompi_*_f
! function as MPI_Allreduce, so the shim cannot leave it alone.)
!   pmpi_app_f08 T
program pmpi_app_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 65536
  real, allocatable :: x(:), got(:), ref(:)
  integer :: rank, nranks, i, r, failures, total
  integer(kind=8) :: h, lo, hi
  type(MPI_Request) :: req
  real :: tol
  character(len=32) :: arg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call get_command_argument(1, arg)
  read (arg, *) tol
  allocate (x(n), got(n), ref(n))
  ref = 0
  do r = 0, nranks - 1
    do i = 1, n
      ref(i) = ref(i) + real(mod(i*7919 + r*104729, 20001) - 10000) / 10000.0
    end do
  end do
  do i = 1, n
    x(i) = real(mod(i*7919 + rank*104729, 20001) - 10000) / 10000.0
  end do
  failures = 0

  call MPI_Allreduce(x, got, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  call check('f08 allreduce')
  got = x
  call MPI_Allreduce(MPI_IN_PLACE, got, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD)
  call check('f08 allreduce in place')
  got = 0
  call MPI_Iallreduce(x, got, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check('f08 iallreduce')

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  subroutine check(name)
    character(len=*), intent(in) :: name
    h = 0
    do i = 1, n
      h = ieor(h * 31_8, int(transfer(got(i), 0), 8))
    end do
    call MPI_Allreduce(h, lo, 1, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD)
    call MPI_Allreduce(h, hi, 1, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD)
    if (maxval(abs(got - ref)) > tol * nranks .or. lo /= hi) then
      failures = failures + 1
      print '(a, i0, 3a, es10.3)', 'rank ', rank, ': FAIL ', name, ': error ', &
        maxval(abs(got - ref))
    else if (rank == 0) then
      print '(2a)', 'ok ', name
    end if
  end subroutine check

end program pmpi_app_f08
