/* results_hdf5.c — placeholder being written (HDF5 backend of rb_results.h). */
