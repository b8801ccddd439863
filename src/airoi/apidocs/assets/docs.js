// Starts Swagger UI on the served description, for the page at /api/v1/docs.
//
// A file of its own rather than the inline script the framework's Swagger page carries: the
// page's Content-Security-Policy allows scripts from the server only (script-src 'self'), so no
// inline script runs there. The description's address is read from the page
// (data-description-url), so this file holds no path.
"use strict";

(function start() {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.descriptionUrl,
    domNode: root,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    // The service answers GET and HEAD only; the description declares GET.
    supportedSubmitMethods: ["get"],
    // No badge from validator.swagger.io: nothing leaves for another host.
    validatorUrl: null,
    // ?url= and ?configUrl= on the page's address are not read: the page shows this API only.
    queryConfigEnabled: false,
    // The token typed into Authorize lives in the page's memory and is gone on reload.
    persistAuthorization: false,
    displayRequestDuration: true,
  });
})();
