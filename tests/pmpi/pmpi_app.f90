! An ordinary Fortran MPI program (`use mpi`), not written against Octet, used to test that the
! PMPI shim also sees Fortran callers. Every result is compared with the same call made through
! PMPI_ALLREDUCE / PMPI_BCAST (which no shim intercepts).
!   pmpi_app_f          every result must be bit-identical to the PMPI_ reference
!   pmpi_app_f T        REAL sums must be within T * nranks of the reference and identical on
!                       every rank; small and DOUBLE PRECISION calls must stay bit-identical.
program pmpi_app_f
  use mpi
  implicit none
  integer, parameter :: n = 65536, nsmall = 100
  real, allocatable :: x(:), got(:), ref(:)
  double precision, allocatable :: dx(:), dgot(:), dref(:)
  integer :: rank, nranks, ierr, i, failures, total, req
  real :: tol
  character(len=32) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  tol = -1.0
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) tol
  end if
  allocate (x(n), got(n), ref(n), dx(n), dgot(n), dref(n))
  do i = 1, n
    x(i) = real(mod(i*7919 + rank*104729, 20001) - 10000) / 10000.0
  end do
  dx = x
  failures = 0

  call PMPI_ALLREDUCE(x, ref, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_ALLREDUCE(x, got, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check_candidate('fortran allreduce', got, ref, .true.)
  got = x
  call MPI_ALLREDUCE(MPI_IN_PLACE, got, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check_candidate('fortran allreduce in place', got, ref, .true.)
  got = 0
  call MPI_IALLREDUCE(x, got, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call check_candidate('fortran iallreduce+wait', got, ref, .true.)

  got = x
  ref = x
  call PMPI_BCAST(ref, n, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
  call MPI_BCAST(got, n, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
  call check_candidate('fortran bcast', got, ref, .false.)

  call PMPI_ALLREDUCE(x, ref, nsmall, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_ALLREDUCE(x, got, nsmall, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(got(1:nsmall) == ref(1:nsmall)), 'fortran small allreduce')
  call PMPI_ALLREDUCE(dx, dref, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_ALLREDUCE(dx, dgot, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(dgot == dref), 'fortran double allreduce')

  call MPI_ALLREDUCE(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'fortran: ', total, ' failed checks'
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(ok, name)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: name
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,2a)', 'rank ', rank, ': FAIL ', name
    else if (rank == 0) then
      print '(2a)', 'ok ', name
    end if
  end subroutine check

  ! same: the result must also be identical on every rank (not so for bcast: the root keeps its own).
  subroutine check_candidate(name, a, b, same)
    character(len=*), intent(in) :: name
    real, intent(in) :: a(:), b(:)
    logical, intent(in) :: same
    integer :: lo, hi, h
    if (tol < 0) then
      call check(all(a == b), name)
      return
    end if
    call check(maxval(abs(a - b)) <= tol * nranks, name)
    if (.not. same) return
    ! Identical on every rank: compare a checksum of the bits (integer MIN/MAX, never compressed).
    h = sum(mod(transfer(a, h, size(a)), 1000))
    call MPI_ALLREDUCE(h, lo, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
    call MPI_ALLREDUCE(h, hi, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    call check(lo == hi, name // ' (same on every rank)')
  end subroutine check_candidate

end program pmpi_app_f
