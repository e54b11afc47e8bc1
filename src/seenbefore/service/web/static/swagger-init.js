// Starts Swagger UI on /docs (service/routers/docs.py). A file, not an inline script, so the
// page's Content-Security-Policy can allow scripts from this origin only. validatorUrl: null
// keeps Swagger UI from sending the schema to an online validator.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
})();
