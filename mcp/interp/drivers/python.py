# placeholder: the driver lands from branch interp-drivers
