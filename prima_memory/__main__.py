from .main import exit_with, main

exit_with(main())
