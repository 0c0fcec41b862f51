"""Running a campaign: the session (store, launcher, signals), scheduling, calibration, fixed and adaptive loops."""
