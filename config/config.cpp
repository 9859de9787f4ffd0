// The configuration loader lands here.
